/* The libFuzzer entry points of a target, and, when it is built without
 * libFuzzer (CUS_FUZZ_LIBFUZZER undefined), a main() that replays inputs:
 * each argument is a file, or a directory whose files (sorted; dotfiles left
 * out) are run. Each input is copied into a heap buffer of exactly its size,
 * so that AddressSanitizer and valgrind see a read past its end.
 *
 * In a directory, libFuzzer's reproducers (crash-*, leak-*, oom-*, timeout-*,
 * slow-unit-*) are left out unless CUS_FUZZ_REPLAY_ALL=1: they are kept for
 * bugs being fixed, and are replayed by naming the file. */
#ifndef CUSCOPE_TEST_FUZZ_MAIN_H
#define CUSCOPE_TEST_FUZZ_MAIN_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed invariant: report and abort (libFuzzer saves the input). */
#define FUZZ_CHECK(cond)                                                                    \
    do {                                                                                    \
        if (!(cond))                                                                        \
            fuzz_fail_(__FILE__, __LINE__, #cond);                                          \
    } while (0)

#include <stdio.h>
#include <stdlib.h>

static inline void fuzz_fail_(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
    abort();
}

#ifndef CUS_FUZZ_LIBFUZZER

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

static int replay_file(const char *path, unsigned long *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        return 1;
    }
    /* exactly n bytes (malloc(0) may give NULL: use 1 then, reading none) */
    unsigned char *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return 1;
    }
    memcpy(exact, buf, n);
    free(buf);
    (void)LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    (*count)++;
    return 0;
}

static int is_reproducer(const char *name)
{
    static const char *const prefixes[] = {"crash-", "leak-", "oom-", "timeout-", "slow-unit-"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

static int replay_path(const char *path, unsigned long *count, unsigned long *skipped)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path, count);
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) {
        perror(path);
        return 1;
    }
    const char *all = getenv("CUS_FUZZ_REPLAY_ALL");
    int errors = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        if (name[0] != '.') {
            if (is_reproducer(name) && !(all && strcmp(all, "1") == 0)) {
                fprintf(stderr, "skipped %s/%s (a reproducer: name the file to run it)\n", path, name);
                (*skipped)++;
            } else {
                size_t len = strlen(path) + strlen(name) + 2;
                char *full = malloc(len);
                if (full) {
                    snprintf(full, len, "%s/%s", path, name);
                    errors += replay_path(full, count, skipped);
                    free(full);
                } else {
                    errors++;
                }
            }
        }
        free(names[i]);
    }
    free(names);
    return errors;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n(replays fuzz inputs; built without libFuzzer)\n",
                argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    unsigned long count = 0, skipped = 0;
    int errors = 0;
    for (int i = 1; i < argc; i++)
        errors += replay_path(argv[i], &count, &skipped);
    printf("%lu inputs replayed, %lu reproducers skipped, %d unreadable paths\n", count, skipped,
           errors);
    return errors ? 1 : 0;
}

#endif /* !CUS_FUZZ_LIBFUZZER */

#endif
