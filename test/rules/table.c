/* The table: printing and writing it, reading the checked-in one, comparing
 * them cell by cell (with the fake's deliberate differences), and checking
 * that the rows cover every entry point the fake serves. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

#ifdef CUS_TEST_FAKE
#include "driver/entries.h"
#include "fake/fake_core.h"
#endif

const char *const rules_column_names[COL_COUNT] = {
    "ok", "none", "other", "destroyed", "null", "stale", "poisoned", "otherdev",
};

#define PROVISIONAL_LINE "# PROVISIONAL: generated on the fake; to be replaced by the H200's table"
#define DRIVER_PREFIX "# driver: "

bool rules_table_init(rules_table *t)
{
    memset(t, 0, sizeof *t);
    t->cells = calloc(rules_row_count, sizeof *t->cells);
    return t->cells != NULL;
}

void rules_table_free(rules_table *t)
{
    free(t->cells);
    t->cells = NULL;
}

/* --- the order: by symbol, then version ------------------------------------------------------- */

static int by_name(const void *pa, const void *pb)
{
    const rules_row *a = &rules_rows[*(const size_t *)pa], *b = &rules_rows[*(const size_t *)pb];
    int c = strcmp(a->symbol, b->symbol);
    return c ? c : (a->version > b->version) - (a->version < b->version);
}

static const size_t *sorted(void)
{
    static size_t order[1024];
    static bool done;
    if (rules_row_count > sizeof order / sizeof order[0])
        abort(); /* grow order[] */
    if (!done) {
        for (size_t i = 0; i < rules_row_count; i++)
            order[i] = i;
        qsort(order, rules_row_count, sizeof order[0], by_name);
        done = true;
    }
    return order;
}

/* --- printing and writing ------------------------------------------------------------------------ */

void rules_table_print(const rules_table *t, FILE *f)
{
    fprintf(f, "# cuscope: the driver's context rules, one line per entry point@version, one\n"
               "# cell per state (test/rules/rules.h says what each column means).\n");
    fprintf(f, DRIVER_PREFIX "%s\n", t->driver);
    if (t->provisional)
        fprintf(f, PROVISIONAL_LINE "\n");
    fprintf(f, "# Regenerate on a GPU: meson test -C build --suite gpu gpu-rules with\n"
               "# CUS_RULES_WRITE=$PWD/test/rules/expected.txt (or gpu-rules --write FILE).\n");
    const size_t *order = sorted();
    for (size_t k = 0; k < rules_row_count; k++) {
        size_t i = order[k];
        char name[96];
        rules_row_name(&rules_rows[i], name, sizeof name);
        fprintf(f, "%-49s", name);
        for (int c = 0; c < COL_COUNT; c++)
            fprintf(f, " %s=%s", rules_column_names[c], t->cells[i][c][0] ? t->cells[i][c] : "?");
        fputc('\n', f);
    }
}

bool rules_table_write(const rules_table *t, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return false;
    }
    rules_table_print(t, f);
    if (fclose(f) != 0) {
        perror(path);
        return false;
    }
    return true;
}

/* --- reading ------------------------------------------------------------------------------------- */

static int column_index(const char *name, size_t len)
{
    for (int c = 0; c < COL_COUNT; c++)
        if (strlen(rules_column_names[c]) == len && strncmp(rules_column_names[c], name, len) == 0)
            return c;
    return -1;
}

bool rules_table_read(rules_table *t, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return false;
    }
    char line[2048];
    unsigned lineno = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, PROVISIONAL_LINE, strlen("# PROVISIONAL")) == 0)
            t->provisional = true;
        if (strncmp(line, DRIVER_PREFIX, strlen(DRIVER_PREFIX)) == 0)
            rules_copy(t->driver, sizeof t->driver, line + strlen(DRIVER_PREFIX));
        if (line[0] == '#' || line[strspn(line, " \t")] == '\0')
            continue;
        char *save = NULL, *tok = strtok_r(line, " \t", &save);
        const rules_row *row = rules_row_find(tok);
        if (!row) {
            fprintf(stderr, "%s:%u: no such row in the table: %s\n", path, lineno, tok);
            ok = false;
            break;
        }
        size_t i = (size_t)(row - rules_rows);
        while ((tok = strtok_r(NULL, " \t", &save))) {
            const char *eq = strchr(tok, '=');
            int c = eq ? column_index(tok, (size_t)(eq - tok)) : -1;
            if (c < 0 || strlen(eq + 1) >= RULES_CELL_SIZE) {
                fprintf(stderr, "%s:%u: not a cell: %s\n", path, lineno, tok);
                ok = false;
                break;
            }
            rules_copy(t->cells[i][c], RULES_CELL_SIZE, eq + 1);
        }
    }
    fclose(f);
    return ok;
}

/* --- the deliberate differences -------------------------------------------------------------------- */

typedef struct deliberate {
    char rows[96]; /* a row's name, or a pattern of them (fnmatch) */
    int column;
    char driver[RULES_CELL_SIZE], fake[RULES_CELL_SIZE]; /* "*": any */
    char reason[256];
    unsigned line;
    bool used;
} deliberate;

static bool row_matches(const deliberate *d, const rules_row *row)
{
    char name[96];
    rules_row_name(row, name, sizeof name);
    return fnmatch(d->rows, name, 0) == 0;
}

/* Whether a row that the line names ran (all of them, with no `ran`). */
static bool ran_any(const deliberate *d, const bool *ran)
{
    for (size_t i = 0; i < rules_row_count; i++)
        if ((!ran || ran[i]) && row_matches(d, &rules_rows[i]))
            return true;
    return false;
}

/* Reads path: lines "<rows> <column> driver=<value> fake=<value> <reason>",
 * <rows> a row's name or a pattern of them (rules.h); # comments and blank
 * lines. Returns the count, -1 on an error. */
static int read_deliberate(const char *path, deliberate **out)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    deliberate *list = NULL;
    int n = 0, cap = 0;
    char line[1024];
    unsigned lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || line[strspn(line, " \t")] == '\0')
            continue;
        char row[96], column[32], dv[64], fv[64];
        int used = 0;
        if (sscanf(line, "%95s %31s driver=%63s fake=%63s %n", row, column, dv, fv, &used) != 4 ||
            !line[used]) {
            fprintf(stderr, "%s:%u: want \"<entry>@<version> <column> driver=<value> "
                            "fake=<value> <reason>\"\n", path, lineno);
            goto fail;
        }
        int c = column_index(column, strlen(column));
        if (c < 0) {
            fprintf(stderr, "%s:%u: no such column: %s\n", path, lineno, column);
            goto fail;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            deliberate *grown = realloc(list, (size_t)cap * sizeof *list);
            if (!grown)
                goto fail;
            list = grown;
        }
        deliberate *d = &list[n++];
        memset(d, 0, sizeof *d);
        rules_copy(d->rows, sizeof d->rows, row);
        d->column = c;
        if (!ran_any(d, NULL)) {
            fprintf(stderr, "%s:%u: no row is %s\n", path, lineno, row);
            goto fail;
        }
        d->line = lineno;
        rules_copy(d->driver, sizeof d->driver, dv);
        rules_copy(d->fake, sizeof d->fake, fv);
        rules_copy(d->reason, sizeof d->reason, line + used);
    }
    fclose(f);
    *out = list;
    return n;
fail:
    fclose(f);
    free(list);
    return -1;
}

static bool value_matches(const char *pattern, const char *value)
{
    return strcmp(pattern, "*") == 0 || strcmp(pattern, value) == 0;
}

static deliberate *find_deliberate(deliberate *list, int n, const rules_row *row, int column,
                                   const char *driver, const char *fake)
{
    for (int i = 0; i < n; i++)
        if (list[i].column == column && row_matches(&list[i], row) &&
            value_matches(list[i].driver, driver) && value_matches(list[i].fake, fake))
            return &list[i];
    return NULL;
}

/* --- comparing ---------------------------------------------------------------------------------------- */

/* Values that stand for no result: not compared. */
static bool unknown(const char *v)
{
    return strcmp(v, "n/a") == 0 || strcmp(v, "skip") == 0;
}

/* Whether a result matches an expected cell: one value, or alternatives
 * "A|B" where the driver answered differently from run to run (a double
 * destroy, undefined behaviour, answered either as the freed memory
 * allows). */
static bool matches(const char *want, const char *got)
{
    size_t n = strlen(got);
    for (const char *p = want;;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, got, n) == 0)
            return true;
        if (!bar)
            return false;
        p = bar + 1;
    }
}

int rules_table_compare(const rules_table *got, const rules_table *want,
                        const char *deliberate_path, const bool *ran)
{
    deliberate *list = NULL;
    int nlist = 0, failures = 0, excused = 0;
    if (rules_on_fake && deliberate_path) {
        nlist = read_deliberate(deliberate_path, &list);
        if (nlist < 0)
            return 1;
    }
    const size_t *order = sorted();
    for (size_t k = 0; k < rules_row_count; k++) {
        size_t i = order[k];
        if (ran && !ran[i])
            continue;
        const rules_row *row = &rules_rows[i];
        char name[96];
        rules_row_name(row, name, sizeof name);
        for (int c = 0; c < COL_COUNT; c++) {
            const char *g = got->cells[i][c], *w = want->cells[i][c];
            if (!w[0]) {
                printf("%s %s: missing from the expected table (this run: %s)\n", name,
                       rules_column_names[c], g);
                failures++;
                continue;
            }
            if (unknown(g) || unknown(w) || matches(w, g)) {
                /* A deliberate line for a cell the driver answers like the
                 * fake excuses nothing; one for a cell not compared stays
                 * (a line for that very row: a pattern of rows must excuse
                 * a difference). */
                if (rules_on_fake && (unknown(g) || unknown(w)))
                    for (int d = 0; d < nlist; d++)
                        if (list[d].column == c && strcmp(list[d].rows, name) == 0)
                            list[d].used = true;
                continue;
            }
            if (!rules_on_fake) {
                printf("%s %s: expected=%s driver=%s\n", name, rules_column_names[c], w, g);
                failures++;
                continue;
            }
            deliberate *d = find_deliberate(list, nlist, row, c, w, g);
            if (d) {
                d->used = true;
                excused++;
                printf("deliberate: %s %s: driver=%s fake=%s (%s)\n", name,
                       rules_column_names[c], w, g, d->reason);
                continue;
            }
            printf("%s %s: driver=%s fake=%s\n", name, rules_column_names[c], w, g);
            failures++;
        }
    }
    for (int d = 0; d < nlist; d++) {
        if (list[d].used || !ran_any(&list[d], ran))
            continue;
        printf("%s:%u: %s %s driver=%s fake=%s excuses no difference: remove it\n",
               deliberate_path, list[d].line, list[d].rows, rules_column_names[list[d].column],
               list[d].driver, list[d].fake);
        failures++;
    }
    if (excused)
        printf("rules: %d difference%s listed as deliberate (%s)\n", excused,
               excused == 1 ? "" : "s", deliberate_path);
    free(list);
    return failures;
}

/* --- coverage ---------------------------------------------------------------------------------------- */

#ifdef CUS_TEST_FAKE
typedef struct entry {
    const char *symbol;
    int version;
} entry;

static const entry fake_entry_list[] = {
#define RULES_FAKE_ENTRY_(symbol, version, name, flags) {#symbol, version},
    FAKE_ENTRIES(RULES_FAKE_ENTRY_)
#undef RULES_FAKE_ENTRY_
};

static const entry cuscope_entry_list[] = {
#define RULES_CUSCOPE_ENTRY_(field, symbol, version, need) {#symbol, version},
    CUS_DRIVER_ENTRIES(RULES_CUSCOPE_ENTRY_)
#undef RULES_CUSCOPE_ENTRY_
};

static bool listed(const entry *list, size_t n, const char *symbol, int version)
{
    for (size_t i = 0; i < n; i++)
        if (list[i].version == version && strcmp(list[i].symbol, symbol) == 0)
            return true;
    return false;
}

static int check_list(const entry *list, size_t n, const char *whose)
{
    int missing = 0;
    for (size_t i = 0; i < n; i++) {
        char name[96];
        snprintf(name, sizeof name, "%s@%d", list[i].symbol, list[i].version);
        if (!rules_row_find(name)) {
            printf("rules: %s lists %s, which has no row: add it to RULES_ROWS "
                   "(test/rules/rules.h) and its CALL to test/rules/rows.c\n", whose, name);
            missing++;
        }
    }
    return missing;
}

int rules_check_coverage(void)
{
    const size_t nfake = sizeof fake_entry_list / sizeof fake_entry_list[0];
    int missing = check_list(fake_entry_list, nfake, "the fake's resolver (FAKE_ENTRIES)");
    missing += check_list(cuscope_entry_list,
                          sizeof cuscope_entry_list / sizeof cuscope_entry_list[0],
                          "cuscope's driver table (CUS_DRIVER_ENTRIES)");
    for (size_t i = 0; i < rules_row_count; i++) {
        const rules_row *row = &rules_rows[i];
        char name[96];
        rules_row_name(row, name, sizeof name);
        if (!listed(fake_entry_list, nfake, row->symbol, row->version)) {
            printf("rules: row %s is not an entry point of the fake (FAKE_ENTRIES)\n", name);
            missing++;
        } else {
            void *p = NULL;
            CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
            if (cus_fake_get_proc_address(row->symbol, &p, row->version,
                                          CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
                found != CU_GET_PROC_ADDRESS_SUCCESS || !p) {
                printf("rules: the fake's resolver does not serve %s\n", name);
                missing++;
            }
        }
    }
    return missing;
}
#else
int rules_check_coverage(void)
{
    return 0;
}
#endif
