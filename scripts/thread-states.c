/*
 * thread-states PID [INTERVAL_US] [CORES]: samples the states of a running process's threads from /proc until
 * it exits, to see why cores sit idle while a program has work (a lock, a hand-off between threads, a wait).
 *
 * Prints, per 100 ms: the mean number of the process's threads that were runnable (running or waiting for a
 * core) and how many threads it had; with CORES (the first CORES cores, 0 to CORES-1, as `taskset -c 0-N`
 * gives them), also the shares of those cores' time that were user, system, idle, irq, softirq and stolen by
 * a hypervisor (/proc/stat). Then, over the whole run, how often N threads were runnable, and the average
 * number of threads in each (thread name, state, kernel wait channel).
 *
 *   cc -O2 -o thread-states scripts/thread-states.c
 *   taskset -c 0-14 sample-cli bench pipeline --images 3000 --threads 15 & sleep 0.2
 *   taskset -c 15 ./thread-states $(pgrep -f "bench pipeline") 500 15   # on a core of its own
 *
 * Reading /proc costs CPU: give the sampler a core the program does not use.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_KEYS = 4096, MAX_BUCKETS = 100000, MAX_RUNNABLE = 256, STAT_FIELDS = 6 };

static char keys[MAX_KEYS][200];
static long keyCounts[MAX_KEYS];
static int keyCount;
static long runnableHistogram[MAX_RUNNABLE + 1];
static long samples;
static double bucketRunnable[MAX_BUCKETS];
static int bucketSamples[MAX_BUCKETS], bucketThreads[MAX_BUCKETS];
static double bucketCoreShares[MAX_BUCKETS][STAT_FIELDS];
static int bucketHasCoreShares[MAX_BUCKETS];
static int cores;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Ticks of cores 0..cores-1: user+nice, system, idle+iowait, irq, softirq, steal. */
static void readCoreTicks(unsigned long long ticks[STAT_FIELDS]) {
    memset(ticks, 0, STAT_FIELDS * sizeof ticks[0]);
    FILE *file = fopen("/proc/stat", "r");
    if (!file) return;
    char line[512];
    while (fgets(line, sizeof line, file)) {
        int core;
        unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
        if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &core, &user, &nice, &system, &idle, &iowait,
                   &irq, &softirq, &steal) == 9 && core < cores) {
            ticks[0] += user + nice; ticks[1] += system; ticks[2] += idle + iowait;
            ticks[3] += irq; ticks[4] += softirq; ticks[5] += steal;
        }
    }
    fclose(file);
}

static void count(const char *key) {
    for (int i = 0; i < keyCount; i++) {
        if (!strcmp(keys[i], key)) { keyCounts[i]++; return; }
    }
    if (keyCount < MAX_KEYS) { snprintf(keys[keyCount], sizeof keys[0], "%s", key); keyCounts[keyCount++] = 1; }
}

static int readFile(const char *path, char *buffer, int size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    int length = (int)read(fd, buffer, size - 1);
    close(fd);
    if (length < 0) length = 0;
    buffer[length] = 0;
    return length;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: thread-states PID [INTERVAL_US] [CORES]\n"); return 2; }
    int pid = atoi(argv[1]);
    long interval = argc > 2 ? atol(argv[2]) : 500;
    cores = argc > 3 ? atoi(argv[3]) : 0;
    unsigned long long previous[STAT_FIELDS];
    if (cores) readCoreTicks(previous);
    double start = now();
    int lastBucket = 0, currentBucket = 0;
    char path[512], stat[4096], wchan[128], name[64], key[200];
    for (;;) {
        snprintf(path, sizeof path, "/proc/%d/task", pid);
        DIR *tasks = opendir(path);
        if (!tasks) break;
        int runnable = 0, threads = 0;
        for (struct dirent *task; (task = readdir(tasks));) {
            if (task->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "/proc/%d/task/%s/stat", pid, task->d_name);
            if (readFile(path, stat, sizeof stat) <= 0) continue;
            /* "tid (name) state ...": the name may hold spaces and parentheses, so take the last ')'. */
            char *open = strchr(stat, '('), *close = strrchr(stat, ')');
            if (!open || !close || close[1] == 0) continue;
            int length = (int)(close - open - 1);
            if (length > 63) length = 63;
            memcpy(name, open + 1, length);
            name[length] = 0;
            char state = close[2];
            snprintf(path, sizeof path, "/proc/%d/task/%s/wchan", pid, task->d_name);
            if (readFile(path, wchan, sizeof wchan) < 0) strcpy(wchan, "?");
            snprintf(key, sizeof key, "%s|%c|%s", name, state, state == 'R' ? "-" : wchan);
            count(key);
            if (state == 'R') runnable++;
            threads++;
        }
        closedir(tasks);
        currentBucket = (int)((now() - start) * 10);
        if (currentBucket >= MAX_BUCKETS) break;
        if (cores && currentBucket != lastBucket) {
            unsigned long long ticks[STAT_FIELDS];
            readCoreTicks(ticks);
            double total = 0;
            for (int k = 0; k < STAT_FIELDS; k++) total += ticks[k] - previous[k];
            if (total > 0) {
                for (int k = 0; k < STAT_FIELDS; k++) bucketCoreShares[lastBucket][k] = 100.0 * (ticks[k] - previous[k]) / total;
                bucketHasCoreShares[lastBucket] = 1;
            }
            memcpy(previous, ticks, sizeof ticks);
            lastBucket = currentBucket;
        }
        bucketRunnable[currentBucket] += runnable;
        bucketSamples[currentBucket]++;
        bucketThreads[currentBucket] = threads;
        runnableHistogram[runnable > MAX_RUNNABLE ? MAX_RUNNABLE : runnable]++;
        samples++;
        if (interval > 0) usleep(interval);
    }
    printf("per 100 ms: mean runnable threads / threads%s\n",
           cores ? "; cores' time: % user, system, idle, irq, softirq, steal" : "");
    for (int i = 0; i <= currentBucket && i < MAX_BUCKETS; i++) {
        if (!bucketSamples[i]) continue;
        printf("  %5.1fs %5.1f /%d", i / 10.0, bucketRunnable[i] / bucketSamples[i], bucketThreads[i]);
        if (bucketHasCoreShares[i]) {
            double *share = bucketCoreShares[i];
            printf("   %5.1f %5.1f %5.1f %4.1f %4.1f %4.1f", share[0], share[1], share[2], share[3], share[4], share[5]);
        }
        printf("\n");
    }
    printf("samples: %ld\nrunnable threads per sample:\n", samples);
    for (int i = 0; i <= MAX_RUNNABLE; i++) {
        if (runnableHistogram[i]) printf("  %3d: %5.1f%%\n", i, 100.0 * runnableHistogram[i] / samples);
    }
    printf("threads per sample by name, state and wait:\n");
    for (int shown = 0; shown < 40 && shown < keyCount; shown++) {
        int most = shown;
        for (int i = shown + 1; i < keyCount; i++) if (keyCounts[i] > keyCounts[most]) most = i;
        long countAtMost = keyCounts[most];
        char keyAtMost[200];
        memcpy(keyAtMost, keys[most], sizeof keyAtMost);
        keyCounts[most] = keyCounts[shown]; memcpy(keys[most], keys[shown], sizeof keys[0]);
        keyCounts[shown] = countAtMost; memcpy(keys[shown], keyAtMost, sizeof keys[0]);
        printf("  %7.2f  %s\n", (double)keyCounts[shown] / samples, keys[shown]);
    }
    return 0;
}
