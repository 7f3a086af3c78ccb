/* A program that calls the fake driver's functions only, linked against an
 * installed cuscope with a run path to its libdir (.ci/run, installed): the
 * fake library finds libcuscope.so.0 beside it by its own run path ($ORIGIN),
 * since the program's run path does not reach a library's dependencies. */
#include <stdio.h>

#include <cuscope/fake.h>

int main(void)
{
    if (cus_fake_install(NULL) != CUS_SUCCESS || cus_fake_uninstall() != CUS_SUCCESS) {
        fputs("fake_only: the fake did not install and uninstall\n", stderr);
        return 1;
    }
    puts("fake_only: the fake installed and uninstalled");
    return 0;
}
