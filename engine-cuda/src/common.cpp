/* common.cpp: the thread-local last-error buffer behind fail() / eng_last_error(). */
#include "common.h"

#include <stdarg.h>
#include <stdio.h>

namespace maya {

static thread_local char error_buf[1024];

int32_t fail(int32_t status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(error_buf, sizeof error_buf, fmt, args);
    va_end(args);
    return status;
}

const char *last_error() { return error_buf; }

void clear_error() { error_buf[0] = '\0'; }

} // namespace maya
