/* common.h: status returns and the thread-local last error shared by every engine source file.
 *
 * Internal functions return an int32_t status (the ENG_STATUS_* codes of engine.h) and record the
 * detail with fail(); the ABI layer (engine.cpp) hands it out through eng_last_error(). Nothing
 * here prints, exits or throws.
 */
#ifndef MAYA_COMMON_H
#define MAYA_COMMON_H

#include <stdint.h>
#include <stddef.h>

#include "../include/engine.h" // defines: ENG_STATUS_*, ENG_PARAM_*, ENG_INFO_*, ENG_STAT_*

namespace maya {

/* Records printf-style detail for the calling thread and returns status (so `return fail(...)`). */
int32_t fail(int32_t status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The calling thread's latest detail ("" if none). */
const char *last_error();
void clear_error();

/* Checked status propagation: return the status of expr if it is a failure. */
#define ENG_TRY(expr)                    \
    do {                                 \
        int32_t status_ = (expr);        \
        if (status_ < 0) return status_; \
    } while (0)

} // namespace maya

#endif
