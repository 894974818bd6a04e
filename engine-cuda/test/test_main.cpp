/* test_main.cpp: runs the registered tests; exit status 1 if any check failed. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "../src/kernels.h"
#include "test.h"

int g_test_failures = 0;

static std::vector<TestCase> &registry() {
    static std::vector<TestCase> r;
    return r;
}

void test_register(const char *name, void (*fn)()) { registry().push_back({name, fn}); }

std::string test_tmpdir(const char *tag) {
    const char *base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/maya-engine-test-" + tag + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) return std::string();
    return std::string(buf.data());
}

std::string test_repo_root() {
    const char *r = getenv("MAYA_REPO_ROOT");
    return r ? r : ".";
}

int main(int argc, char **argv) {
    // The C tests run on the CPU backend unless the caller picks one (test-gpu.sh sets cuda).
    setenv("MAYA_ENGINE_BACKEND", "cpu", 0);
    if (argc > 1 && !strcmp(argv[1], "--simd-paths")) { // the kernel tables this CPU runs (run.sh)
        const maya::Kernels *t[3];
        int n = maya::kernels_supported(t);
        for (int i = 0; i < n; i++) printf("%s%s", i ? " " : "", t[i]->name);
        printf("\n");
        return 0;
    }
    const char *simd = getenv("MAYA_ENGINE_SIMD");
    fprintf(stderr, "engine tests: kernels %s (MAYA_ENGINE_SIMD=%s)\n", maya::kernels_select().name, simd ? simd : "");
    int n_run = 0, n_failed = 0;
    for (const TestCase &t : registry()) {
        if (argc > 1 && !strstr(t.name, argv[1])) continue;
        int before = g_test_failures;
        fprintf(stderr, "%s\n", t.name);
        t.fn();
        n_run++;
        if (g_test_failures != before) n_failed++;
    }
    fprintf(stderr, "%d tests, %d failed, %d failed checks\n", n_run, n_failed, g_test_failures);
    return g_test_failures ? 1 : 0;
}
