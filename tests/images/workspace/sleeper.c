/* The first process of a main that chrooted itself: waits for a signal, and ends on SIGTERM. */
#include <unistd.h>

int main(void) {
  for (;;) pause();
}
