/* json.cpp: recursive-descent JSON parser (RFC 8259; depth-limited; \u escapes to UTF-8). */
#include "json.h"

#include <stdlib.h>
#include <string.h>

namespace maya {

const JsonValue *JsonValue::get(const char *key) const {
    if (kind != OBJECT) return nullptr;
    for (const auto &m : members)
        if (m.first == key) return &m.second;
    return nullptr;
}

namespace {

const int kMaxDepth = 256;

struct Parser {
    const char *p;
    const char *end;
    const char *begin;
    std::string error;

    bool fail_at(const char *what) {
        if (error.empty()) error = std::string(what) + " at byte " + std::to_string(p - begin);
        return false;
    }
    void skip_ws() {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    }
    bool literal(const char *word) {
        size_t n = strlen(word);
        if ((size_t)(end - p) < n || memcmp(p, word, n) != 0) return fail_at("invalid literal");
        p += n;
        return true;
    }
    static void put_utf8(std::string *s, uint32_t cp) {
        if (cp < 0x80) {
            s->push_back((char)cp);
        } else if (cp < 0x800) {
            s->push_back((char)(0xC0 | (cp >> 6)));
            s->push_back((char)(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            s->push_back((char)(0xE0 | (cp >> 12)));
            s->push_back((char)(0x80 | ((cp >> 6) & 0x3F)));
            s->push_back((char)(0x80 | (cp & 0x3F)));
        } else {
            s->push_back((char)(0xF0 | (cp >> 18)));
            s->push_back((char)(0x80 | ((cp >> 12) & 0x3F)));
            s->push_back((char)(0x80 | ((cp >> 6) & 0x3F)));
            s->push_back((char)(0x80 | (cp & 0x3F)));
        }
    }
    bool hex4(uint32_t *out) {
        if (end - p < 4) return fail_at("truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; i++) {
            char c = p[i];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
            else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
            else return fail_at("bad \\u escape");
        }
        p += 4;
        *out = v;
        return true;
    }
    bool string(std::string *out) {
        p++; // opening quote
        while (true) {
            if (p >= end) return fail_at("unterminated string");
            unsigned char c = (unsigned char)*p;
            if (c == '"') {
                p++;
                return true;
            }
            if (c < 0x20) return fail_at("control character in string");
            if (c != '\\') {
                out->push_back((char)c);
                p++;
                continue;
            }
            p++;
            if (p >= end) return fail_at("unterminated escape");
            char e = *p++;
            switch (e) {
            case '"': out->push_back('"'); break;
            case '\\': out->push_back('\\'); break;
            case '/': out->push_back('/'); break;
            case 'b': out->push_back('\b'); break;
            case 'f': out->push_back('\f'); break;
            case 'n': out->push_back('\n'); break;
            case 'r': out->push_back('\r'); break;
            case 't': out->push_back('\t'); break;
            case 'u': {
                uint32_t cp = 0;
                if (!hex4(&cp)) return false;
                if (cp >= 0xD800 && cp < 0xDC00) {
                    uint32_t lo = 0;
                    if (end - p < 2 || p[0] != '\\' || p[1] != 'u') return fail_at("lone surrogate");
                    p += 2;
                    if (!hex4(&lo)) return false;
                    if (lo < 0xDC00 || lo >= 0xE000) return fail_at("bad surrogate pair");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp < 0xE000) {
                    return fail_at("lone surrogate");
                }
                put_utf8(out, cp);
                break;
            }
            default: p--; return fail_at("bad escape");
            }
        }
    }
    bool number(JsonValue *v) {
        const char *start = p;
        bool is_int = true;
        if (p < end && *p == '-') p++;
        if (p >= end || !(*p >= '0' && *p <= '9')) return fail_at("bad number");
        if (*p == '0') p++;
        else
            while (p < end && *p >= '0' && *p <= '9') p++;
        if (p < end && *p == '.') {
            is_int = false;
            p++;
            if (p >= end || !(*p >= '0' && *p <= '9')) return fail_at("bad fraction");
            while (p < end && *p >= '0' && *p <= '9') p++;
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
            is_int = false;
            p++;
            if (p < end && (*p == '+' || *p == '-')) p++;
            if (p >= end || !(*p >= '0' && *p <= '9')) return fail_at("bad exponent");
            while (p < end && *p >= '0' && *p <= '9') p++;
        }
        std::string lit(start, (size_t)(p - start));
        v->kind = JsonValue::NUMBER;
        v->number = strtod(lit.c_str(), nullptr);
        if (is_int && lit.size() <= 18) {
            v->integer = strtoll(lit.c_str(), nullptr, 10);
            v->is_integer = true;
        } else if (is_int && lit.size() <= 20) { // 19-20 characters: check the range exactly
            char *stop = nullptr;
            long long x = strtoll(lit.c_str(), &stop, 10);
            if (stop && *stop == '\0' && (double)x == v->number) {
                v->integer = x;
                v->is_integer = true;
            }
        } else if (!is_int && v->number == (double)(int64_t)v->number && v->number > -9.0e15 && v->number < 9.0e15) {
            v->integer = (int64_t)v->number; // 1.0, 2e3: integral values written as floats
            v->is_integer = true;
        }
        return true;
    }
    bool value(JsonValue *v, int depth) {
        if (depth > kMaxDepth) return fail_at("nesting too deep");
        skip_ws();
        if (p >= end) return fail_at("unexpected end");
        char c = *p;
        if (c == '{') {
            v->kind = JsonValue::OBJECT;
            p++;
            skip_ws();
            if (p < end && *p == '}') {
                p++;
                return true;
            }
            while (true) {
                skip_ws();
                if (p >= end || *p != '"') return fail_at("expected member name");
                std::string key;
                if (!string(&key)) return false;
                skip_ws();
                if (p >= end || *p != ':') return fail_at("expected ':'");
                p++;
                v->members.emplace_back(std::move(key), JsonValue());
                if (!value(&v->members.back().second, depth + 1)) return false;
                skip_ws();
                if (p < end && *p == ',') {
                    p++;
                    continue;
                }
                if (p < end && *p == '}') {
                    p++;
                    return true;
                }
                return fail_at("expected ',' or '}'");
            }
        }
        if (c == '[') {
            v->kind = JsonValue::ARRAY;
            p++;
            skip_ws();
            if (p < end && *p == ']') {
                p++;
                return true;
            }
            while (true) {
                v->items.emplace_back();
                if (!value(&v->items.back(), depth + 1)) return false;
                skip_ws();
                if (p < end && *p == ',') {
                    p++;
                    continue;
                }
                if (p < end && *p == ']') {
                    p++;
                    return true;
                }
                return fail_at("expected ',' or ']'");
            }
        }
        if (c == '"') {
            v->kind = JsonValue::STRING;
            return string(&v->string);
        }
        if (c == 't') {
            v->kind = JsonValue::BOOL;
            v->boolean = true;
            return literal("true");
        }
        if (c == 'f') {
            v->kind = JsonValue::BOOL;
            v->boolean = false;
            return literal("false");
        }
        if (c == 'n') {
            v->kind = JsonValue::NUL;
            return literal("null");
        }
        if (c == '-' || (c >= '0' && c <= '9')) return number(v);
        // Python's json.dumps writes NaN/Infinity; configs never need them, so they are errors.
        return fail_at("unexpected character");
    }
};

} // namespace

bool json_parse(const char *text, size_t len, JsonValue *out, std::string *error) {
    Parser ps{text, text + len, text, std::string()};
    *out = JsonValue();
    bool ok = ps.value(out, 0);
    if (ok) {
        ps.skip_ws();
        if (ps.p != ps.end) ok = ps.fail_at("trailing characters");
    }
    if (!ok && error) *error = ps.error;
    return ok;
}

} // namespace maya
