/* The pod sandbox ("pause") process: holds the pod's namespaces, reaps
 * orphaned children, exits on SIGINT/SIGTERM. Built with gcc -static into
 * localhost/pause:1 because no registry can be reached. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig) { (void)sig; _exit(0); }
static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, 0, WNOHANG) > 0) {}
}

int main(void) {
  struct sigaction term = {0}, child = {0};
  term.sa_handler = on_term;
  sigaction(SIGINT, &term, 0);
  sigaction(SIGTERM, &term, 0);
  child.sa_handler = on_child;
  child.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &child, 0);
  for (;;) pause();
}
