/*
 * A process that owns connections in the `connections` case (bench/cases/connections.mjs): it
 * maps the MXL flow files it is given (read-only, shared, as an MXL reader does) so that the
 * exporter finds them in its /proc/PID/maps, prints "ready" and waits to be killed.
 *
 *   mapper FILE...
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    int fd = open(argv[i], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
      perror(argv[i]);
      return 1;
    }
    if (mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) {
      perror("mmap");
      return 1;
    }
    close(fd);
  }
  puts("ready");
  fflush(stdout);
  for (;;) pause();
}
