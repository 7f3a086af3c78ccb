/* rules: the differential of the driver's context rules (rules.h), one
 * program built twice: test-rules on the fake (suite unit) and gpu-rules on
 * libcuda (suite gpu).
 *
 *   --expect FILE      compare with a checked-in table, cell by cell: on the
 *                      fake, every difference fails but those that
 *                      --deliberate FILE lists; on the real driver every
 *                      difference fails, unless FILE is PROVISIONAL (made on
 *                      the fake), when they are only printed
 *   --write FILE       write the table (so does $CUS_RULES_WRITE)
 *   --isolate WHICH    none: every cell in this process; bad: the cells of
 *                      the columns destroyed, null, stale and poisoned each in
 *                      a process of its own, the others in a few shared ones
 *                      (a cell that crashes its process is recorded as the
 *                      signal, and the others go on); all: every cell in its
 *                      own. The default: none on the fake, bad on the driver.
 *   --jobs N           processes at a time when isolating (default: the CPUs, at most 8)
 *   --risky            also run the cells marked skip (rules.h), isolated
 *   --cell-timeout S   a cell that takes longer kills its process (TIMEOUT);
 *                      isolating only (default 60)
 *   --only TEXT        only the rows whose name contains TEXT, or one of the
 *                      comma-separated TEXTs (the rows not run are written
 *                      with ? cells)
 *
 * The table goes to stdout. Exit status: 0, 1 for a difference or a broken
 * control (an ok cell that is not CUDA_SUCCESS on a row with no note), 77
 * without a driver or a device, 2 for a usage error. */
#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rules.h"

typedef enum isolation { ISOLATE_DEFAULT, ISOLATE_NONE, ISOLATE_BAD, ISOLATE_ALL } isolation;

typedef struct options {
    const char *expect, *write, *deliberate, *only;
    isolation isolate;
    int jobs;
    bool risky;
    unsigned cell_timeout;
} options;

/* A cell to run: row index and column. */
typedef struct cell {
    unsigned short row, col;
} cell;

static rules_table table;
static bool harness_failed;

static void usage(void)
{
    fprintf(stderr, "usage: rules [--expect FILE [--deliberate FILE]] [--write FILE]\n"
                    "             [--isolate none|bad|all] [--jobs N] [--risky]\n"
                    "             [--cell-timeout SECONDS] [--only TEXT[,TEXT...]]\n");
    exit(2);
}

/* Whether name contains one of the comma-separated texts of list. */
static bool name_matches(const char *name, const char *list)
{
    for (const char *t = list; *t;) {
        size_t len = strcspn(t, ",");
        char text[96];
        if (len && len < sizeof text) {
            memcpy(text, t, len);
            text[len] = '\0';
            if (strstr(name, text))
                return true;
        }
        t += len + (t[len] == ',');
    }
    return false;
}

static void parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->cell_timeout = 60;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--risky") == 0) {
            o->risky = true;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (strcmp(a, "--expect") == 0)
            o->expect = v;
        else if (strcmp(a, "--write") == 0)
            o->write = v;
        else if (strcmp(a, "--deliberate") == 0)
            o->deliberate = v;
        else if (strcmp(a, "--only") == 0)
            o->only = v;
        else if (strcmp(a, "--jobs") == 0 && atoi(v) > 0)
            o->jobs = atoi(v);
        else if (strcmp(a, "--cell-timeout") == 0 && atoi(v) > 0)
            o->cell_timeout = (unsigned)atoi(v);
        else if (strcmp(a, "--isolate") == 0 && strcmp(v, "none") == 0)
            o->isolate = ISOLATE_NONE;
        else if (strcmp(a, "--isolate") == 0 && strcmp(v, "bad") == 0)
            o->isolate = ISOLATE_BAD;
        else if (strcmp(a, "--isolate") == 0 && strcmp(v, "all") == 0)
            o->isolate = ISOLATE_ALL;
        else
            usage();
    }
    if (o->isolate == ISOLATE_DEFAULT)
        o->isolate = rules_on_fake ? ISOLATE_NONE : ISOLATE_BAD;
    if (!o->jobs) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->jobs = n < 1 ? 1 : n > 8 ? 8 : (int)n;
    }
}

/* --- the plan: the cells to run, poisoned ones last ------------------------------------------------ */

static bool isolated(const options *o, cell c)
{
    if (o->isolate == ISOLATE_ALL)
        return true;
    if (o->isolate == ISOLATE_NONE)
        return false;
    return c.col == COL_DESTROYED || c.col == COL_NULL || c.col == COL_STALE ||
           c.col == COL_POISONED || rules_cell_risky(&rules_rows[c.row], (rules_column)c.col);
}

/* Fills what needs no run ("-", "skip") and lists the rest in plan: the
 * shared cells, then the isolated ones, then the poisoned. Returns the count;
 * *shared and *unpoisoned: where the isolated and the poisoned begin. */
static size_t make_plan(const options *o, const bool *ran, cell *plan, size_t *shared,
                        size_t *unpoisoned)
{
    size_t n = 0;
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1)
            *shared = n;
        if (pass == 2)
            *unpoisoned = n;
        for (size_t i = 0; i < rules_row_count; i++) {
            const rules_row *row = &rules_rows[i];
            unsigned applies = rules_columns_of(row);
            for (int c = 0; c < COL_COUNT && ran[i]; c++) {
                cell x = {(unsigned short)i, (unsigned short)c};
                int want = c == COL_POISONED ? 2 : isolated(o, x) ? 1 : 0;
                if (want != pass)
                    continue;
                if (!(applies & COL_BIT(c)))
                    snprintf(table.cells[i][c], RULES_CELL_SIZE, "-");
                else if (!rules_on_fake && !o->risky && rules_cell_risky(row, (rules_column)c))
                    snprintf(table.cells[i][c], RULES_CELL_SIZE, "skip");
                else
                    plan[n++] = x;
            }
        }
    }
    return n;
}

/* --- in this process ------------------------------------------------------------------------------ */

static int run_here(const cell *plan, size_t n)
{
    char why[256];
    if (!rules_driver_open(why, sizeof why)) {
        printf("skipping: no usable CUDA driver or device: %s\n", why);
        rules_driver_close();
        return 77;
    }
    rules_driver_describe(table.driver, sizeof table.driver);
    for (size_t k = 0; k < n; k++)
        if (!rules_run_cell(&rules_rows[plan[k].row], (rules_column)plan[k].col,
                            table.cells[plan[k].row][plan[k].col], RULES_CELL_SIZE))
            harness_failed = true;
    rules_driver_close();
    return 0;
}

/* --- in child processes ----------------------------------------------------------------------------
 * Each child opens the driver, then runs a range of the plan, writing to its
 * pipe "S <k>" before cell k, "R <k> <text>" once its result is known, and
 * "T <k>" when its teardown is done ("T <k> F" when the harness failed); or
 * "X <why>" when there is no driver (and exits 77). The parent never touches
 * the driver, so each child starts from nothing. */

typedef struct job {
    size_t from, to; /* plan[from, to) */
} job;

typedef struct child {
    pid_t pid;
    int fd;
    job job;
    size_t next;     /* the first cell of the job not reported */
    bool started;    /* plan[next] began */
    bool settled;    /* and has its result: its teardown runs */
    bool poisoned;   /* a job of the last phase */
    char buf[4096];
    size_t len;
} child;

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && write(fd, line, (size_t)n) < 0)
        _exit(3);
}

static int child_fd;
static size_t child_cell;

static void report_result(const char *result)
{
    say(child_fd, "R %zu %s\n", child_cell, result);
}

static _Noreturn void child_main(const cell *plan, job j, int fd, unsigned timeout)
{
    char why[256];
    child_fd = fd;
    rules_cell_result_hook = report_result;
    if (!rules_driver_open(why, sizeof why)) {
        say(fd, "X %s\n", why);
        _exit(77);
    }
    if (j.from == 0) {
        rules_driver_describe(why, sizeof why);
        say(fd, "D %s\n", why);
    }
    for (size_t k = j.from; k < j.to; k++) {
        char out[RULES_CELL_SIZE];
        child_cell = k;
        say(fd, "S %zu\n", k);
        alarm(timeout);
        bool ok = rules_run_cell(&rules_rows[plan[k].row], (rules_column)plan[k].col, out,
                                 sizeof out);
        alarm(0);
        say(fd, "T %zu%s\n", k, ok ? "" : " F");
    }
    _exit(0);
}

static const char *death(int status, char *buf, size_t size)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGABRT, "SIGABRT"},
                 {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},   {SIGALRM, "TIMEOUT"},
                 {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"}};
    if (WIFSIGNALED(status)) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (names[i].sig == WTERMSIG(status))
                return names[i].name;
        snprintf(buf, size, "SIG%d", WTERMSIG(status));
    } else {
        snprintf(buf, size, "exit-%d", WEXITSTATUS(status));
    }
    return buf;
}

typedef struct supervisor {
    const cell *plan;
    const options *opts;
    job *queue; /* pending jobs: [head, tail) */
    size_t head, tail, poisoned_from;
    child *kids;
    int active, forked, died;
    char no_driver[256];
} supervisor;

static bool start_child(supervisor *s, child *k, job j, bool poisoned)
{
    int fds[2];
    if (pipe(fds) != 0) {
        perror("rules: pipe");
        return false;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("rules: fork");
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        for (int i = 0; i < s->opts->jobs; i++)
            if (s->kids[i].pid > 0)
                close(s->kids[i].fd);
        child_main(s->plan, j, fds[1], s->opts->cell_timeout);
    }
    close(fds[1]);
    memset(k, 0, sizeof *k);
    k->pid = pid;
    k->fd = fds[0];
    k->job = j;
    k->next = j.from;
    k->poisoned = poisoned;
    s->active++;
    s->forked++;
    return true;
}

static void take_line(supervisor *s, child *k, char *line)
{
    char *end;
    if (line[0] == 'X') {
        rules_copy(s->no_driver, sizeof s->no_driver, line + 2);
        return;
    }
    if (line[0] == 'D') {
        rules_copy(table.driver, sizeof table.driver, line + 2);
        return;
    }
    size_t idx = strtoul(line + 2, &end, 10);
    if (idx < k->job.from || idx >= k->job.to)
        return;
    if (line[0] == 'S') {
        k->next = idx;
        k->started = true;
        k->settled = false;
    } else if (line[0] == 'R') {
        cell c = s->plan[idx];
        rules_copy(table.cells[c.row][c.col], RULES_CELL_SIZE, *end ? end + 1 : "?");
        k->settled = true;
    } else if (line[0] == 'T') {
        if (strcmp(end, " F") == 0)
            harness_failed = true;
        k->next = idx + 1;
        k->started = k->settled = false;
    }
}

static void read_child(supervisor *s, child *k)
{
    ssize_t n = read(k->fd, k->buf + k->len, sizeof k->buf - 1 - k->len);
    if (n > 0) {
        k->len += (size_t)n;
        k->buf[k->len] = '\0';
        char *p = k->buf, *nl;
        while ((nl = strchr(p, '\n'))) {
            *nl = '\0';
            take_line(s, k, p);
            p = nl + 1;
        }
        k->len = strlen(p);
        memmove(k->buf, p, k->len + 1);
        return;
    }
    if (n < 0 && errno == EINTR)
        return;
    /* EOF: the child is done, or died. */
    close(k->fd);
    int status = 0;
    while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR)
        ;
    k->pid = 0;
    s->active--;
    bool normal = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (normal || (WIFEXITED(status) && WEXITSTATUS(status) == 77 && s->no_driver[0]))
        return;
    s->died++;
    char buf[32];
    const char *what = death(status, buf, sizeof buf);
    if (k->started && k->settled) {
        /* The result stands; the driver gave way in the teardown. */
        cell c = s->plan[k->next];
        char name[96];
        rules_row_name(&rules_rows[c.row], name, sizeof name);
        fprintf(stderr, "rules: %s %s: the process died in the teardown (%s)\n", name,
                rules_column_names[c.col], what);
        k->next++;
    } else if (k->started) {
        cell c = s->plan[k->next];
        rules_copy(table.cells[c.row][c.col], RULES_CELL_SIZE, what);
        k->next++;
    } else if (k->next < k->job.to) {
        fprintf(stderr, "rules: a child died between cells (%s)\n", what);
        harness_failed = true;
    }
    /* The rest of its job goes to a new child. */
    if (k->next < k->job.to)
        s->queue[s->tail++] = (job){k->next, k->job.to};
}

static int run_children(const options *o, const cell *plan, size_t n, size_t shared,
                        size_t unpoisoned)
{
    supervisor s = {.plan = plan, .opts = o};
    s.queue = calloc(n + (size_t)o->jobs + 1, sizeof *s.queue);
    s.kids = calloc((size_t)o->jobs, sizeof *s.kids);
    if (!s.queue || !s.kids) {
        free(s.queue);
        free(s.kids);
        return 1;
    }
    /* The shared cells in a few contiguous jobs, then one job per cell. */
    size_t per = shared ? (shared + (size_t)o->jobs - 1) / (size_t)o->jobs : 0;
    for (size_t from = 0; from < shared; from += per)
        s.queue[s.tail++] = (job){from, from + per < shared ? from + per : shared};
    for (size_t k = shared; k < unpoisoned; k++)
        s.queue[s.tail++] = (job){k, k + 1};
    /* The poisoned jobs stay out of the queue until the others are done. */
    size_t next_poisoned = unpoisoned;

    while (!s.no_driver[0]) {
        bool phase2 = s.head == s.tail && next_poisoned < n;
        for (int i = 0; i < o->jobs; i++) {
            if (s.kids[i].pid > 0)
                continue;
            if (s.head < s.tail) {
                if (!start_child(&s, &s.kids[i], s.queue[s.head++], false))
                    goto out;
            } else if (phase2 && next_poisoned < n) {
                /* Only once no unpoisoned cell is running. */
                bool busy = false;
                for (int j = 0; j < o->jobs; j++)
                    busy |= s.kids[j].pid > 0 && !s.kids[j].poisoned;
                if (busy)
                    break;
                if (!start_child(&s, &s.kids[i], (job){next_poisoned, next_poisoned + 1}, true))
                    goto out;
                next_poisoned++;
            }
        }
        if (!s.active)
            break;
        struct pollfd pfd[64];
        int map[64], np = 0;
        for (int i = 0; i < o->jobs && np < 64; i++)
            if (s.kids[i].pid > 0) {
                pfd[np] = (struct pollfd){.fd = s.kids[i].fd, .events = POLLIN};
                map[np++] = i;
            }
        if (poll(pfd, (nfds_t)np, -1) < 0 && errno != EINTR)
            break;
        for (int p = 0; p < np; p++)
            if (pfd[p].revents)
                read_child(&s, &s.kids[map[p]]);
    }
out:
    for (int i = 0; i < o->jobs; i++)
        if (s.kids[i].pid > 0) {
            kill(s.kids[i].pid, SIGKILL);
            close(s.kids[i].fd);
            waitpid(s.kids[i].pid, NULL, 0);
        }
    fprintf(stderr, "rules: %zu cells in %d processes (%d died in a cell)\n", n, s.forked,
            s.died);
    free(s.queue);
    free(s.kids);
    if (s.no_driver[0]) {
        printf("skipping: no usable CUDA driver or device: %s\n", s.no_driver);
        return 77;
    }
    return 0;
}

/* --- the checks ------------------------------------------------------------------------------------ */

/* The ok column: CUDA_SUCCESS, unless the row says why not. */
static int check_controls(const bool *ran)
{
    int bad = 0;
    for (size_t i = 0; i < rules_row_count; i++) {
        const rules_row *row = &rules_rows[i];
        const char *ok = table.cells[i][COL_OK];
        if (!ran[i] || row->note || row->handle == H_UNCOUNTED || strcmp(ok, "CUDA_SUCCESS") == 0 ||
            strcmp(ok, "absent") == 0)
            continue;
        char name[96];
        rules_row_name(row, name, sizeof name);
        printf("control: %s ok=%s: the row's call is not valid on this driver\n", name, ok);
        bad++;
    }
    return bad;
}

int main(int argc, char **argv)
{
    options o;
    parse_options(argc, argv, &o);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int failures = rules_check_coverage();
    if (!rules_table_init(&table) || !rules_cells_init())
        return 1;
    table.provisional = rules_on_fake;

    bool *ran = calloc(rules_row_count, sizeof *ran);
    cell *plan = calloc(rules_row_count * COL_COUNT, sizeof *plan);
    if (!ran || !plan)
        return 1;
    for (size_t i = 0; i < rules_row_count; i++) {
        char name[96];
        rules_row_name(&rules_rows[i], name, sizeof name);
        ran[i] = !o.only || name_matches(name, o.only);
    }
    size_t shared = 0, unpoisoned = 0, n = make_plan(&o, ran, plan, &shared, &unpoisoned);
    int rc = o.isolate == ISOLATE_NONE ? run_here(plan, n)
                                       : run_children(&o, plan, n, shared, unpoisoned);
    rules_cells_fini();
    if (rc != 0) {
        free(ran);
        free(plan);
        rules_table_free(&table);
        return rc;
    }

    rules_table_print(&table, stdout);
    const char *env_write = getenv("CUS_RULES_WRITE");
    if (o.write && !rules_table_write(&table, o.write))
        failures++;
    if (env_write && *env_write && !rules_table_write(&table, env_write))
        failures++;
    failures += check_controls(ran);

    if (o.expect) {
        rules_table want;
        if (!rules_table_init(&want) || !rules_table_read(&want, o.expect)) {
            failures++;
        } else {
            int diffs = rules_table_compare(&table, &want, o.deliberate, ran);
            if (diffs && !rules_on_fake && want.provisional)
                printf("rules: %s is PROVISIONAL (made on the fake): %d cell%s differ%s, not "
                       "failing; this run's table is the one to check in\n",
                       o.expect, diffs, diffs == 1 ? "" : "s", diffs == 1 ? "s" : "");
            else
                failures += diffs;
        }
        rules_table_free(&want);
    }
    if (harness_failed) {
        printf("rules: the harness failed (see above)\n");
        failures++;
    }
    printf("rules: %zu rows, %zu cells run; %d failure%s\n", rules_row_count, n, failures,
           failures == 1 ? "" : "s");
    free(ran);
    free(plan);
    rules_table_free(&table);
    return failures ? 1 : 0;
}
