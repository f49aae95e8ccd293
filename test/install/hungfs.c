/*
 * hungfs: a FUSE filesystem whose root directory never finishes listing, standing in for an NFS
 * or FUSE mount that stops answering. getattr answers (the root is a 0755 directory, so a stat
 * of the mount point returns); readdir(3) of the root blocks in the kernel (fuse_readdir waits
 * for the server's answer), which never comes: the callback sleeps until the process is killed,
 * when the kernel fails the request (the connection is gone). Test-only (test/install).
 *   hungfs MOUNTPOINT -f -o allow_other   (allow_other: a container's uid 65534 reads it too)
 * Build: cc hungfs.c $(pkg-config --cflags --libs fuse3) (Debian libfuse3-dev, fuse3).
 */
#define FUSE_USE_VERSION 31
#include <fuse.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int hung_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  (void)fi;
  if (strcmp(path, "/") != 0) return -ENOENT;
  memset(st, 0, sizeof *st);
  st->st_mode = S_IFDIR | 0755;
  st->st_nlink = 2;
  return 0;
}

static int hung_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
  (void)path; (void)buf; (void)fill; (void)off; (void)fi; (void)flags;
  for (;;) pause();
  return 0;
}

static const struct fuse_operations ops = { .getattr = hung_getattr, .readdir = hung_readdir };

int main(int argc, char *argv[]) { return fuse_main(argc, argv, &ops, NULL); }
