/*
 * probe: one POSIX system call per verb, for the POSIX conformance suite (Posix*Test).
 *
 * Shell tools hide errnos behind messages and do extra checks of their own (mv refuses a move into
 * a subdirectory before calling rename); this program makes the call itself and prints its outcome:
 * "OK" (or the value asked for) on success, the errno's symbolic name (EACCES, ENOENT, ...) on
 * failure. It exits 0 in both cases and 2 on bad usage, so a test compares outputs, and the same
 * script run on a local directory gives the reference behaviour.
 *
 * Compiled by the tests at run time with `cc -O1 -o probe probe.c`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

static const char *errname(int e) {
  switch (e) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EIO: return "EIO";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case EACCES: return "EACCES";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EFBIG: return "EFBIG";
    case ENOSPC: return "ENOSPC";
    case EROFS: return "EROFS";
    case EMLINK: return "EMLINK";
    case ERANGE: return "ERANGE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ENODATA: return "ENODATA";
    case ENOTSUP: return "ENOTSUP";
    case ENOSYS: return "ENOSYS";
    case E2BIG: return "E2BIG";
    case ETXTBSY: return "ETXTBSY";
    case ELOOP: return "ELOOP";
    default: {
      static char buf[32];
      snprintf(buf, sizeof buf, "E%d", e);
      return buf;
    }
  }
}

/* Prints OK or the errno of a call's result (-1 means failure). */
static int outcome(long rc) {
  if (rc < 0) {
    printf("%s\n", errname(errno));
  } else {
    printf("OK\n");
  }
  return 0;
}

static int fail(const char *what) {
  printf("%s %s\n", what, errname(errno));
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: probe VERB ARGS... (see probe.c)\n");
  return 2;
}

static int oflags(const char *spec) {
  int f = 0;
  char *copy = strdup(spec);
  for (char *t = strtok(copy, ","); t; t = strtok(NULL, ",")) {
    if (!strcmp(t, "rdonly")) f |= O_RDONLY;
    else if (!strcmp(t, "wronly")) f |= O_WRONLY;
    else if (!strcmp(t, "rdwr")) f |= O_RDWR;
    else if (!strcmp(t, "creat")) f |= O_CREAT;
    else if (!strcmp(t, "excl")) f |= O_EXCL;
    else if (!strcmp(t, "trunc")) f |= O_TRUNC;
    else if (!strcmp(t, "append")) f |= O_APPEND;
    else if (!strcmp(t, "directory")) f |= O_DIRECTORY;
    else if (!strcmp(t, "nofollow")) f |= O_NOFOLLOW;
    else { fprintf(stderr, "unknown open flag %s\n", t); exit(2); }
  }
  free(copy);
  return f;
}

/* "SEC.NSEC", "now" or "omit" */
static struct timespec timearg(const char *s) {
  struct timespec t = {0, 0};
  if (!strcmp(s, "now")) {
    t.tv_nsec = UTIME_NOW;
  } else if (!strcmp(s, "omit")) {
    t.tv_nsec = UTIME_OMIT;
  } else {
    char *dot;
    t.tv_sec = strtoll(s, &dot, 10);
    t.tv_nsec = *dot == '.' ? strtol(dot + 1, NULL, 10) : 0;
  }
  return t;
}

static int lockcmd(int fd, int cmd, const char *type, const char *start, const char *len, struct flock *l) {
  memset(l, 0, sizeof *l);
  l->l_type = !strcmp(type, "r") ? F_RDLCK : !strcmp(type, "w") ? F_WRLCK : F_UNLCK;
  l->l_whence = SEEK_SET;
  l->l_start = atoll(start);
  l->l_len = atoll(len);
  return fcntl(fd, cmd, l);
}

/* Waits until stdin ends: how a test tells a holding probe to go on. */
static void await_stdin(void) {
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc < 3) return usage();
  const char *verb = argv[1];
  const char *path = argv[2];

  /* access PATH MODES: MODES of r, w, x, or f (existence) */
  if (!strcmp(verb, "access") && argc == 4) {
    int m = 0;
    for (const char *c = argv[3]; *c; c++) {
      m |= *c == 'r' ? R_OK : *c == 'w' ? W_OK : *c == 'x' ? X_OK : F_OK;
    }
    return outcome(access(path, m));
  }
  /* open PATH FLAGS [MODE(octal)]: opens and closes */
  if (!strcmp(verb, "open") && (argc == 4 || argc == 5)) {
    int fd = open(path, oflags(argv[3]), argc == 5 ? (mode_t) strtol(argv[4], NULL, 8) : 0644);
    if (fd >= 0) close(fd);
    return outcome(fd);
  }
  /* write PATH FLAGS TEXT: opens with FLAGS (creating with 0644), writes TEXT in one write() */
  if (!strcmp(verb, "write") && argc == 5) {
    int fd = open(path, oflags(argv[3]), 0644);
    if (fd < 0) return outcome(fd);
    ssize_t n = write(fd, argv[4], strlen(argv[4]));
    int e = errno;
    close(fd);
    errno = e;
    return outcome(n);
  }
  /* pwrite PATH OFFSET TEXT: writes TEXT at OFFSET of an existing file (no truncation) */
  if (!strcmp(verb, "pwrite") && argc == 5) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return outcome(fd);
    ssize_t n = pwrite(fd, argv[4], strlen(argv[4]), atoll(argv[3]));
    int e = errno;
    close(fd);
    errno = e;
    return outcome(n);
  }
  /* append PATH TAG COUNT [LEN]: COUNT records of LEN bytes (default 16, at least 12), one
   * write() each through an O_APPEND descriptor: TAG, spaces, a 9-digit sequence number, newline */
  if (!strcmp(verb, "append") && (argc == 5 || argc == 6)) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return outcome(fd);
    long count = atol(argv[4]);
    int len = argc == 6 ? atoi(argv[5]) : 16;
    if (len < 12 || len > 60 || (int) strlen(argv[3]) > len - 11) return usage();
    char rec[64];
    for (long i = 0; i < count; i++) {
      snprintf(rec, sizeof rec, "%-*s%09ld\n", len - 10, argv[3], i);
      if (write(fd, rec, len) != len) return fail("write");
    }
    return outcome(close(fd));
  }
  /* ftruncate PATH SIZE: ftruncate on an fd opened for writing; prints fstat's size after */
  if (!strcmp(verb, "ftruncate") && argc == 4) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return outcome(fd);
    if (ftruncate(fd, atoll(argv[3])) < 0) return fail("ftruncate");
    struct stat st;
    fstat(fd, &st);
    printf("%lld\n", (long long) st.st_size);
    close(fd);
    return 0;
  }
  /* fsync|fdatasync PATH TEXT: appends TEXT and syncs the fd */
  if ((!strcmp(verb, "fsync") || !strcmp(verb, "fdatasync")) && argc == 4) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return outcome(fd);
    if (write(fd, argv[3], strlen(argv[3])) < 0) return fail("write");
    int rc = verb[1] == 's' ? fsync(fd) : fdatasync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return outcome(rc);
  }
  /* utimens PATH ATIME MTIME: each SEC.NSEC, now or omit; nofollow as a 4th argument */
  if (!strcmp(verb, "utimens") && (argc == 5 || argc == 6)) {
    struct timespec ts[2] = {timearg(argv[3]), timearg(argv[4])};
    return outcome(utimensat(AT_FDCWD, path, ts, argc == 6 ? AT_SYMLINK_NOFOLLOW : 0));
  }
  /* futimens PATH ATIME MTIME: the same through an open fd */
  if (!strcmp(verb, "futimens") && argc == 5) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return outcome(fd);
    struct timespec ts[2] = {timearg(argv[3]), timearg(argv[4])};
    int rc = futimens(fd, ts);
    int e = errno;
    close(fd);
    errno = e;
    return outcome(rc);
  }
  /* times PATH: atime mtime ctime as SEC.NSEC */
  if (!strcmp(verb, "times") && argc == 3) {
    struct stat st;
    if (stat(path, &st) < 0) return outcome(-1);
    printf("%lld.%09ld %lld.%09ld %lld.%09ld\n", (long long) st.st_atim.tv_sec, st.st_atim.tv_nsec,
        (long long) st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long) st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
    return 0;
  }
  /* setx PATH NAME VALUE [create|replace] */
  if (!strcmp(verb, "setx") && (argc == 5 || argc == 6)) {
    int f = argc == 6 ? (!strcmp(argv[5], "create") ? XATTR_CREATE : XATTR_REPLACE) : 0;
    return outcome(setxattr(path, argv[3], argv[4], strlen(argv[4]), f));
  }
  /* getx PATH NAME [BUFSIZE]: prints the value */
  if (!strcmp(verb, "getx") && (argc == 4 || argc == 5)) {
    char buf[65536];
    size_t size = argc == 5 ? (size_t) atol(argv[4]) : sizeof buf;
    ssize_t n = getxattr(path, argv[3], buf, size);
    if (n < 0) return outcome(n);
    printf("%.*s\n", (int) n, buf);
    return 0;
  }
  /* sizex PATH NAME: the value's size, asked with a zero-sized buffer */
  if (!strcmp(verb, "sizex") && argc == 4) {
    ssize_t n = getxattr(path, argv[3], NULL, 0);
    if (n < 0) return outcome(n);
    printf("%zd\n", n);
    return 0;
  }
  /* listx PATH: user.* names, one a line, in the order listxattr gives them */
  if (!strcmp(verb, "listx") && argc == 3) {
    char buf[65536];
    ssize_t size = listxattr(path, NULL, 0);
    if (size < 0) return outcome(size);
    ssize_t n = listxattr(path, buf, sizeof buf);
    if (n < 0) return outcome(n);
    if (n != size) printf("size %zd but %zd\n", size, n);
    for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
      if (!strncmp(p, "user.", 5)) printf("%s\n", p);
    }
    printf("END\n");
    return 0;
  }
  /* rmx PATH NAME */
  if (!strcmp(verb, "rmx") && argc == 4) {
    return outcome(removexattr(path, argv[3]));
  }
  /* statfs PATH: block size, blocks, free, available, files, free files, name length */
  if (!strcmp(verb, "statfs") && argc == 3) {
    struct statvfs s;
    if (statvfs(path, &s) < 0) return outcome(-1);
    printf("%lu %llu %llu %llu %llu %llu %lu\n", s.f_bsize, (unsigned long long) s.f_blocks,
        (unsigned long long) s.f_bfree, (unsigned long long) s.f_bavail, (unsigned long long) s.f_files,
        (unsigned long long) s.f_ffree, s.f_namemax);
    return 0;
  }
  /* mmap-read PATH: prints the file's bytes, read through a read-only shared mapping */
  if (!strcmp(verb, "mmap-read") && argc == 3) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return outcome(fd);
    struct stat st;
    fstat(fd, &st);
    if (st.st_size == 0) return 0;
    char *m = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return fail("mmap");
    fwrite(m, 1, st.st_size, stdout);
    munmap(m, st.st_size);
    close(fd);
    return 0;
  }
  /* mmap-write PATH OFFSET TEXT [nosync|append]: stores TEXT at OFFSET through a MAP_SHARED mapping
   * of the whole file, msyncs (unless nosync) and unmaps; the file's size stays as it is. With
   * append, the file is opened O_RDWR|O_APPEND, which must not move where the pages go. */
  if (!strcmp(verb, "mmap-write") && (argc == 5 || argc == 6)) {
    int nosync = argc == 6 && !strcmp(argv[5], "nosync");
    int fd = open(path, O_RDWR | (argc == 6 && !strcmp(argv[5], "append") ? O_APPEND : 0));
    if (fd < 0) return outcome(fd);
    struct stat st;
    fstat(fd, &st);
    char *m = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return fail("mmap");
    memcpy(m + atol(argv[3]), argv[4], strlen(argv[4]));
    if (!nosync && msync(m, st.st_size, MS_SYNC) < 0) return fail("msync");
    munmap(m, st.st_size);
    return outcome(close(fd));
  }
  /* lock PATH r|w START LEN: takes an fcntl lock (F_SETLK), prints LOCKED and holds it until
   * stdin ends, or prints the errno; getlk PATH r|w START LEN: prints UNLCK or the holder's type
   * and pid; trylock: F_SETLK, prints OK or the errno, and lets go */
  if ((!strcmp(verb, "lock") || !strcmp(verb, "getlk") || !strcmp(verb, "trylock")) && argc == 6) {
    int fd = open(path, O_RDWR);
    if (fd < 0) return outcome(fd);
    struct flock l;
    if (!strcmp(verb, "getlk")) {
      if (lockcmd(fd, F_GETLK, argv[3], argv[4], argv[5], &l) < 0) return fail("getlk");
      if (l.l_type == F_UNLCK) printf("UNLCK\n");
      else printf("%s %d\n", l.l_type == F_WRLCK ? "WRLCK" : "RDLCK", (int) l.l_pid);
      return 0;
    }
    if (lockcmd(fd, F_SETLK, argv[3], argv[4], argv[5], &l) < 0) return outcome(-1);
    if (!strcmp(verb, "trylock")) return outcome(0);
    printf("LOCKED %d\n", (int) getpid());
    fflush(stdout);
    await_stdin();
    return 0;
  }
  /* lockw PATH r|w START LEN: F_SETLKW (waits), then prints LOCKED */
  if (!strcmp(verb, "lockw") && argc == 6) {
    int fd = open(path, O_RDWR);
    if (fd < 0) return outcome(fd);
    struct flock l;
    if (lockcmd(fd, F_SETLKW, argv[3], argv[4], argv[5], &l) < 0) return outcome(-1);
    printf("LOCKED\n");
    return 0;
  }
  /* unlinked PATH: creates PATH, writes, unlinks it while open, then writes, reads, fstats and
   * fchmods through the fd; the name is gone at once, the file when the fd closes */
  if (!strcmp(verb, "unlinked") && argc == 3) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return outcome(fd);
    if (write(fd, "before unlink\n", 14) != 14) return fail("write");
    if (unlink(path) < 0) return fail("unlink");
    struct stat st;
    printf("stat after unlink: %s\n", stat(path, &st) < 0 ? errname(errno) : "still there");
    if (write(fd, "after unlink\n", 13) != 13) return fail("write");
    char buf[128];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    if (n < 0) return fail("pread");
    printf("read %.*s", (int) n, buf);
    if (fstat(fd, &st) < 0) return fail("fstat");
    printf("size %lld nlink %lu\n", (long long) st.st_size, (unsigned long) st.st_nlink);
    if (ftruncate(fd, 6) < 0) return fail("ftruncate");
    n = pread(fd, buf, sizeof buf, 0);
    printf("truncated %.*s\n", (int) n, buf);
    return outcome(close(fd));
  }
  /* hold PATH: opens PATH read-write, prints OPEN, waits for stdin to end, then reads the file
   * from the start, prints it, appends "held\n" and closes */
  if (!strcmp(verb, "hold") && argc == 3) {
    int fd = open(path, O_RDWR);
    if (fd < 0) return outcome(fd);
    printf("OPEN\n");
    fflush(stdout);
    await_stdin();
    char buf[4096];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    if (n < 0) return fail("pread");
    printf("%.*s", (int) n, buf);
    struct stat st;
    if (fstat(fd, &st) < 0) return fail("fstat");
    if (pwrite(fd, "held\n", 5, st.st_size) != 5) return fail("pwrite");
    n = pread(fd, buf, sizeof buf, 0);
    printf("%.*s", (int) n, buf);
    return outcome(close(fd));
  }
  /* Plain namespace calls, for their errnos. */
  if (!strcmp(verb, "rename") && argc == 4) return outcome(rename(path, argv[3]));
  if (!strcmp(verb, "link") && argc == 4) return outcome(link(path, argv[3]));
  if (!strcmp(verb, "symlink") && argc == 4) return outcome(symlink(path, argv[3]));
  if (!strcmp(verb, "unlink") && argc == 3) return outcome(unlink(path));
  if (!strcmp(verb, "rmdir") && argc == 3) return outcome(rmdir(path));
  if (!strcmp(verb, "mkdir") && argc == 4) return outcome(mkdir(path, (mode_t) strtol(argv[3], NULL, 8)));
  if (!strcmp(verb, "chmod") && argc == 4) return outcome(chmod(path, (mode_t) strtol(argv[3], NULL, 8)));
  if (!strcmp(verb, "chown") && argc == 5) return outcome(chown(path, (uid_t) atol(argv[3]), (gid_t) atol(argv[4])));
  if (!strcmp(verb, "truncate") && argc == 4) return outcome(truncate(path, atoll(argv[3])));
  if (!strcmp(verb, "mknod") && argc == 4) {
    return outcome(mknod(path, S_IFIFO | (mode_t) strtol(argv[3], NULL, 8), 0));
  }
  return usage();
}
