import { createSocket, type Socket } from 'node:dgram';

// A small authoritative DNS server for tests (RFC 1035 over UDP): A and AAAA answers for the
// names it is given, NXDOMAIN for others, NOERROR with no answer for a known name of the other
// family. Enough for getaddrinfo through a resolv.conf of the test's own. Loopback only.

export interface TestDnsServer {
  address: string;
  port: number;
  /** Questions asked, `name TYPE`. */
  asked: string[];
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;

function readName(msg: Buffer, offset: number): [string, number] {
  const labels: string[] = [];
  let at = offset;
  for (let guard = 0; guard < 128; guard++) {
    const len = msg[at]!;
    if (len === 0) return [labels.join('.').toLowerCase(), at + 1];
    if (len >= 0xc0) throw new Error('compressed names are not expected in a question');
    labels.push(msg.toString('latin1', at + 1, at + 1 + len));
    at += 1 + len;
  }
  throw new Error('name too long');
}

function addressBytes(address: string, type: number): Buffer {
  if (type === TYPE_A) return Buffer.from(address.split('.').map(Number));
  const [head, tail] = address.split('::') as [string, string | undefined];
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/** Answers `records` (name → addresses, IPv4 and IPv6 mixed) on `address`:`port` (53 needs root). */
export async function startDnsServer(records: Record<string, string[]>, address: string, port = 53): Promise<TestDnsServer> {
  const asked: string[] = [];
  const socket: Socket = createSocket('udp4');
  socket.on('message', (msg, peer) => {
    try {
      const id = msg.readUInt16BE(0);
      const [name, end] = readName(msg, 12);
      const type = msg.readUInt16BE(end);
      asked.push(`${name} ${type === TYPE_A ? 'A' : type === TYPE_AAAA ? 'AAAA' : type}`);
      const question = msg.subarray(12, end + 4);
      const known = records[name];
      const answers = (known ?? []).filter((a) => (type === TYPE_A ? !a.includes(':') : type === TYPE_AAAA && a.includes(':')));
      const header = Buffer.alloc(12);
      header.writeUInt16BE(id, 0);
      // QR, AA, RD copied; RCODE 3 (NXDOMAIN) for an unknown name.
      header.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100) | (known === undefined ? 3 : 0), 2);
      header.writeUInt16BE(1, 4);
      header.writeUInt16BE(answers.length, 6);
      const rrs = answers.map((a) => {
        const data = addressBytes(a, type);
        const rr = Buffer.alloc(12);
        rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
        rr.writeUInt16BE(type, 2);
        rr.writeUInt16BE(1, 4); // IN
        rr.writeUInt32BE(5, 6); // TTL 5 s
        rr.writeUInt16BE(data.length, 10);
        return Buffer.concat([rr, data]);
      });
      socket.send(Buffer.concat([header, question, ...rrs]), peer.port, peer.address);
    } catch {
      // A malformed question gets no answer.
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, address, () => resolve());
  });
  return { address, port: socket.address().port, asked, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) };
}
