/*
 * fcntl(2) record locks from the shell, for RecordLockTest:
 *   lockprobe try FILE r|w START LEN        F_SETLK once: prints OK or the errno's name
 *   lockprobe wait FILE r|w START LEN       F_SETLKW: prints OK once granted
 *   lockprobe test FILE r|w START LEN       F_GETLK: prints "none" or "r|w START LEN PID"
 *   lockprobe hold FILE r|w START LEN SECS  F_SETLKW, prints "held", sleeps, exits (the close releases)
 *   lockprobe sieve FILE ME P BLOCKS        data sieving as MPI-IO's does it: for each 4 KiB block,
 *                                           a write lock on it, read it, set every P-th byte from
 *                                           ME to 'A'+ME, write it back, unlock
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int setlk(int fd, int cmd, short type, off_t start, off_t len) {
  struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
  return fcntl(fd, cmd, &l);
}

static short type_of(const char *s) { return s[0] == 'r' ? F_RDLCK : F_WRLCK; }

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: see lockprobe.c\n");
    return 2;
  }
  const char *op = argv[1];
  int fd = open(argv[2], O_RDWR | O_CREAT, 0644);
  if (fd < 0) {
    printf("%s\n", strerrorname_np(errno));
    return 1;
  }
  if (strcmp(op, "sieve") == 0) {
    int me = atoi(argv[3]), p = atoi(argv[4]), blocks = atoi(argv[5]);
    char buf[4096];
    for (int b = 0; b < blocks; b++) {
      off_t at = (off_t)b * sizeof buf;
      if (setlk(fd, F_SETLKW, F_WRLCK, at, sizeof buf) != 0) {
        printf("lock %s\n", strerrorname_np(errno));
        return 1;
      }
      ssize_t n = pread(fd, buf, sizeof buf, at);
      if (n < 0) {
        printf("read %s\n", strerrorname_np(errno));
        return 1;
      }
      memset(buf + n, 0, sizeof buf - n);
      for (int i = me; i < (int)sizeof buf; i += p) {
        buf[i] = (char)('A' + me);
      }
      if (pwrite(fd, buf, sizeof buf, at) != (ssize_t)sizeof buf || setlk(fd, F_SETLK, F_UNLCK, at, sizeof buf) != 0) {
        printf("write or unlock %s\n", strerrorname_np(errno));
        return 1;
      }
    }
    printf("OK\n");
    return 0;
  }
  short type = type_of(argv[3]);
  off_t start = atoll(argv[4]), len = atoll(argv[5]);
  if (strcmp(op, "test") == 0) {
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    if (fcntl(fd, F_GETLK, &l) != 0) {
      printf("%s\n", strerrorname_np(errno));
      return 1;
    }
    if (l.l_type == F_UNLCK) {
      printf("none\n");
    } else {
      printf("%s %lld %lld %d\n", l.l_type == F_RDLCK ? "r" : "w", (long long)l.l_start, (long long)l.l_len, (int)l.l_pid);
    }
    return 0;
  }
  int cmd = strcmp(op, "try") == 0 ? F_SETLK : F_SETLKW;
  if (setlk(fd, cmd, type, start, len) != 0) {
    printf("%s\n", strerrorname_np(errno));
    return 1;
  }
  if (strcmp(op, "hold") == 0) {
    printf("held\n");
    fflush(stdout);
    sleep(argc > 6 ? atoi(argv[6]) : 1);
  } else {
    printf("OK\n");
  }
  close(fd);
  return 0;
}
