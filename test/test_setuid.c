/* CUSCOPE_LIBCUDA in a setuid program (issue 20): a setuid-root program that
 * only called cus_init(), run by an ordinary user with the variable set, ran
 * that user's library constructor with the program's privileges. The loader
 * reads the variable with secure_getenv, which gives NULL in a program in
 * secure-execution mode (set-user-ID, set-group-ID, capabilities).
 *
 * The test installs setuid/probe.c set-user-ID to `nobody` and runs it as
 * root with CUSCOPE_LIBCUDA naming setuid/evil.c's library, whose constructor
 * prints a line: it must not appear. A copy without the bit, run the same
 * way, must load the library (or the check would prove nothing). Root is
 * needed to give a file away; a file system mounted nosuid makes the bit do
 * nothing, and the test says so and skips. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define MARKER "the CUSCOPE_LIBCUDA library's constructor ran"
#define NOBODY 65534

static char dir[4096];

/* probe copied to dir/name, with mode and owner; 0 on success. */
static int install(const char *name, mode_t mode, uid_t owner, char *path, size_t n)
{
    const char *probe = getenv("CUS_TEST_SETUID_PROBE");
    if (!probe)
        return -1;
    snprintf(path, n, "%s/%s", dir, name);
    FILE *in = fopen(probe, "rb"), *out = fopen(path, "wb");
    int bad = !in || !out;
    char buf[65536];
    size_t got;
    while (!bad && (got = fread(buf, 1, sizeof buf, in)) > 0)
        bad = fwrite(buf, 1, got, out) != got;
    if (in)
        fclose(in);
    if (out && fclose(out))
        bad = 1;
    if (!bad && chown(path, owner, owner))
        bad = 1;
    if (!bad && chmod(path, mode)) /* after chown, which clears the set-ID bits */
        bad = 1;
    return bad ? -1 : 0;
}

/* Runs path with CUSCOPE_LIBCUDA set to the evil library; its output in out. */
static void run(const char *path, char *out, size_t n)
{
    const char *evil = getenv("CUS_TEST_SETUID_EVIL");
    assert_non_null(evil);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "CUSCOPE_LIBCUDA='%s' '%s' 2>&1", evil, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t len = fread(out, 1, n - 1, p);
    out[len] = '\0';
    assert_int_equal(pclose(p), 0);
}

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("CUS_TEST_SETUID_DIR");
    snprintf(dir, sizeof dir, "%s/setuid-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    return chmod(dir, 0755);
}

static int teardown(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/plain", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/setuid", dir);
    unlink(path);
    rmdir(dir);
    return 0;
}

static void test_the_variable_is_honoured_in_a_plain_program(void **state)
{
    (void)state;
    char path[4200], out[8192];
    assert_int_equal(install("plain", 0755, getuid(), path, sizeof path), 0);
    run(path, out, sizeof out);
    if (!strstr(out, MARKER))
        fail_msg("the plain probe did not load CUSCOPE_LIBCUDA's library:\n%s", out);
}

static void test_the_variable_is_ignored_in_a_setuid_program(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* giving a file away to another user takes root */
    char path[4200], out[8192];
    assert_int_equal(install("setuid", 04755, NOBODY, path, sizeof path), 0);
    run(path, out, sizeof out);
    char want[64];
    snprintf(want, sizeof want, "euid=%d", NOBODY);
    if (!strstr(out, want)) {
        print_message("the set-user-ID bit had no effect here (a nosuid mount?):\n%s", out);
        skip();
    }
    if (strstr(out, MARKER))
        fail_msg("a setuid program loaded CUSCOPE_LIBCUDA's library:\n%s", out);
    /* It went to the default library instead (absent here, or the real
     * driver on a GPU machine). */
    if (!strstr(out, "CUS_SUCCESS") && !strstr(out, "'libcuda.so.1'"))
        fail_msg("cus_init in the setuid probe did not try libcuda.so.1:\n%s", out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_variable_is_honoured_in_a_plain_program),
        cmocka_unit_test(test_the_variable_is_ignored_in_a_setuid_program),
    };
    return cmocka_run_group_tests_name("setuid", tests, setup, teardown);
}
