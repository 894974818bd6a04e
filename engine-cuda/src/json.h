/* json.h: a small strict JSON reader for config.json, safetensors headers and shard indexes.
 *
 * parse() builds a tree of JsonValue; numbers keep both a double and, when the literal is an
 * integer that fits, an exact int64 (safetensors offsets exceed 2^53 only in theory, but exactness
 * is cheap). Errors carry the byte offset. No allocation failures escape: callers catch bad_alloc
 * at the ABI boundary.
 */
#ifndef MAYA_JSON_H
#define MAYA_JSON_H

#include <stdint.h>
#include <string>
#include <utility>
#include <vector>

namespace maya {

struct JsonValue {
    enum Kind { NUL, BOOL, NUMBER, STRING, ARRAY, OBJECT } kind = NUL;
    bool boolean = false;
    double number = 0;
    int64_t integer = 0; // exact value when is_integer
    bool is_integer = false;
    std::string string;
    std::vector<JsonValue> items;                           // ARRAY
    std::vector<std::pair<std::string, JsonValue>> members; // OBJECT, in document order

    /* Member lookup (OBJECT only); nullptr when absent or not an object. */
    const JsonValue *get(const char *key) const;
    bool is_null() const { return kind == NUL; }
};

/* Parses text[0, len). Returns true on success; on failure writes a message to *error. */
bool json_parse(const char *text, size_t len, JsonValue *out, std::string *error);

} // namespace maya

#endif
