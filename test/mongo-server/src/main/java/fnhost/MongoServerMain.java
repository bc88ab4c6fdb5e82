package fnhost;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.List;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * Starts mongo-java-server (in-memory) on 127.0.0.1 and prints "PORT <n>".
 * Usage: java ... fnhost.MongoServerMain [port]   (0 or none: a free port)
 * Stops when stdin closes (the test harness died or let go) or on SIGTERM.
 *
 * mongo-java-server reports wire version 8 by default; the Node mongodb 7
 * driver refuses anything below 9, so this reports 6.0 / wire version 17.
 */
public final class MongoServerMain {
  private static final MongoVersion VERSION = new MongoVersion() {
    @Override
    public List<Integer> getVersionArray() {
      return List.of(6, 0, 0);
    }

    @Override
    public int getWireVersion() {
      return 17;
    }
  };

  public static void main(String[] args) throws IOException {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
    MongoServer server = new MongoServer(new MemoryBackend().version(VERSION));
    server.bind("127.0.0.1", port);
    Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
    InetSocketAddress address = server.getLocalAddress();
    System.out.println("PORT " + address.getPort());
    System.out.flush();
    InputStream in = System.in;
    byte[] buffer = new byte[256];
    while (in.read(buffer) >= 0) {
      // Ignore input; end of stream means stop.
    }
    server.shutdownNow();
    System.exit(0);
  }
}
