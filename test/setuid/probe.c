/* The program test_setuid.c installs setuid: it calls cus_init() and prints
 * its ids and what cus_init said. Linked with cuscope's sources (not the
 * shared library: a setuid program ignores the build's $ORIGIN run path). */
#include <stdio.h>
#include <unistd.h>

#include <cuscope/cuscope.h>

int main(void)
{
    printf("uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
    cus_status st = cus_init();
    printf("cus_init: %s: %s\n", cus_status_name(st), st ? cus_last_error_message() : "");
    fflush(stdout);
    /* _exit: in a sanitizer build, LeakSanitizer's check at exit cannot run
     * in a set-user-ID program (it stops with a fatal error). */
    _exit(0);
}
