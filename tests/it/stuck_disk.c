/* A disk that stops answering, for tests/it/sled_faults.rs: preloaded (LD_PRELOAD) into the
 * tmproxy a test runs, it makes every pwrite, fsync, fdatasync and sync_file_range block for as
 * long as the file named by $TMPROXY_STUCK_FLAG exists, as a write to a hung disk does. libfiu
 * can fail a call but not hold it, hence this shim. Built by the test with `cc`. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static void wait_while_stuck(void) {
    const char *flag = getenv("TMPROXY_STUCK_FLAG");
    struct timespec pause = {0, 50 * 1000 * 1000};
    while (flag != NULL && access(flag, F_OK) == 0) {
        nanosleep(&pause, NULL);
    }
}

/* The real function the name leads to after this library. */
#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    wait_while_stuck();
    return REAL(pwrite64)(fd, buf, count, offset);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    wait_while_stuck();
    return REAL(pwrite)(fd, buf, count, offset);
}

int fsync(int fd) {
    wait_while_stuck();
    return REAL(fsync)(fd);
}

int fdatasync(int fd) {
    wait_while_stuck();
    return REAL(fdatasync)(fd);
}

int sync_file_range(int fd, off_t offset, off_t nbytes, unsigned int flags) {
    wait_while_stuck();
    return REAL(sync_file_range)(fd, offset, nbytes, flags);
}
