/* The scheduler time slice a thread asks the Linux kernel for: `sched_runtime` of `sched_setattr(2)` for a
 * thread of the normal or batch policy, which Linux 6.12 and later take as the length of its time slice (0:
 * the kernel's default). Swift cannot call the variadic `syscall(2)` these system calls need, hence C. */
#ifndef IPK_THREAD_SCHEDULING_H
#define IPK_THREAD_SCHEDULING_H
#include <stdint.h>

/* The slice the calling thread asked for, in nanoseconds, in `*nanoseconds`; 0 or an errno. */
int ipk_thread_time_slice(uint64_t *nanoseconds);

/* Asks for `nanoseconds` (0: the default) for the calling thread, keeping its policy and nice value, and puts
 * the slice it asked for before in `*previous`; 0 or an errno (EINVAL for a thread of a real-time policy, which
 * has no such slice). */
int ipk_swap_thread_time_slice(uint64_t nanoseconds, uint64_t *previous);

#endif
