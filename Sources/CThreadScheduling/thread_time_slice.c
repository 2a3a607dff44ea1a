#define _GNU_SOURCE
#include "CThreadScheduling.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's `struct sched_attr` (linux/sched/types.h), declared here: glibc before 2.41 has none. */
struct ipk_sched_attr {
    uint32_t size;
    uint32_t policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime;
    uint64_t deadline;
    uint64_t period;
    uint32_t util_min;
    uint32_t util_max;
};

static int read_attributes(struct ipk_sched_attr *attributes) {
    memset(attributes, 0, sizeof *attributes);
    if (syscall(SYS_sched_getattr, 0, attributes, sizeof *attributes, 0) != 0) return errno;
    return 0;
}

int ipk_thread_time_slice(uint64_t *nanoseconds) {
    struct ipk_sched_attr attributes;
    int error = read_attributes(&attributes);
    if (error == 0) *nanoseconds = attributes.runtime;
    return error;
}

int ipk_swap_thread_time_slice(uint64_t nanoseconds, uint64_t *previous) {
    struct ipk_sched_attr attributes;
    int error = read_attributes(&attributes);
    if (error != 0) return error;
    if (attributes.policy != SCHED_OTHER && attributes.policy != SCHED_BATCH) return EINVAL;
    uint64_t before = attributes.runtime;
    attributes.size = sizeof attributes;
    attributes.flags = 0;
    attributes.runtime = nanoseconds;
    if (syscall(SYS_sched_setattr, 0, &attributes, 0) != 0) return errno;
    *previous = before;
    return 0;
}
