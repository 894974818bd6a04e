/* checkpoint.cpp: config.json / safetensors parsing and read-only mmap of weight files.
 *
 * safetensors layout (https://github.com/huggingface/safetensors, format section): an 8-byte
 * little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets:[begin,end]},
 * "__metadata__": {...}}, then the data; offsets are relative to the byte after the header.
 */
#include "checkpoint.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "common.h"              // defines: fail, ENG_STATUS_*
#include "gguf.h"                // defines: gguf_parse, gguf_bind
#include "kernels.h"             // defines: half_to_f32
#include "kernels/ggml_blocks.h" // defines: ggml_row_bytes

namespace maya {

size_t dtype_size(DType dt) {
    switch (dt) {
    case DT_F32: return 4;
    case DT_F16: return 2;
    case DT_BF16: return 2;
    case DT_F8_E4M3: return 1;
    case DT_Q8: return 1;
    default: return 0;
    }
}

int64_t dtype_row_bytes(DType dt, int64_t cols) { return dt == DT_OTHER ? 0 : ggml_row_bytes(dt, cols); }

const char *dtype_name(DType dt) {
    switch (dt) {
    case DT_F32: return "F32";
    case DT_F16: return "F16";
    case DT_BF16: return "BF16";
    case DT_F8_E4M3: return "F8_E4M3";
    case DT_Q8: return "Q8";
    case DT_Q8_0: return "Q8_0";
    case DT_Q4_0: return "Q4_0";
    case DT_Q4_1: return "Q4_1";
    case DT_Q5_0: return "Q5_0";
    case DT_Q5_1: return "Q5_1";
    case DT_Q4_K: return "Q4_K";
    case DT_Q5_K: return "Q5_K";
    case DT_Q6_K: return "Q6_K";
    default: return "other";
    }
}

static float stored_to_f32(const void *src, DType dt, int64_t i) {
    if (dt == DT_F32) {
        float f;
        memcpy(&f, (const uint8_t *)src + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const uint8_t *)src + 2 * i, 2);
    if (dt == DT_BF16) {
        uint32_t bits = (uint32_t)h << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    return half_to_f32(h); // f16
}

void quantize_q8_matrix(const void *src, DType dt, int64_t rows, int64_t cols, int8_t *q, float *scales) {
    const int B = 32;
    float v[B];
    for (int64_t b = 0; b < rows * (cols / B); b++) {
        float amax = 0;
        for (int i = 0; i < B; i++) {
            v[i] = stored_to_f32(src, dt, b * B + i);
            amax = fabsf(v[i]) > amax ? fabsf(v[i]) : amax;
        }
        float id = amax > 0 ? 127.0f / amax : 0.0f;
        for (int i = 0; i < B; i++) q[b * B + i] = (int8_t)lrintf(v[i] * id);
        scales[b] = amax / 127.0f;
    }
}

static size_t header_dtype_size(const std::string &s) {
    if (s == "F64" || s == "I64" || s == "U64") return 8;
    if (s == "F32" || s == "I32" || s == "U32") return 4;
    if (s == "F16" || s == "BF16" || s == "I16" || s == "U16") return 2;
    if (s == "I8" || s == "U8" || s == "BOOL" || s == "F8_E4M3" || s == "F8_E5M2") return 1;
    return 0;
}

int32_t safetensors_parse(const uint8_t *base, size_t len, const std::string &file,
                          std::unordered_map<std::string, Tensor> *out) {
    if (len < 8) return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: too short for a safetensors header", file.c_str());
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | base[i];
    if (n > len - 8)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: header length %llu exceeds the file", file.c_str(),
                    (unsigned long long)n);
    JsonValue header;
    std::string err;
    if (!json_parse((const char *)base + 8, (size_t)n, &header, &err))
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: header JSON: %s", file.c_str(), err.c_str());
    if (header.kind != JsonValue::OBJECT)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: header is not a JSON object", file.c_str());
    const uint8_t *data = base + 8 + n;
    uint64_t data_len = len - 8 - n;
    for (const auto &m : header.members) {
        if (m.first == "__metadata__") continue;
        const char *name = m.first.c_str();
        const JsonValue &v = m.second;
        const JsonValue *dt = v.get("dtype"), *shape = v.get("shape"), *offs = v.get("data_offsets");
        if (!dt || dt->kind != JsonValue::STRING || !shape || shape->kind != JsonValue::ARRAY || !offs ||
            offs->kind != JsonValue::ARRAY || offs->items.size() != 2)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s: malformed header entry", file.c_str(), name);
        Tensor t;
        t.dtype_str = dt->string;
        t.dtype = dt->string == "F32"       ? DT_F32
                  : dt->string == "F16"     ? DT_F16
                  : dt->string == "BF16"    ? DT_BF16
                  : dt->string == "F8_E4M3" ? DT_F8_E4M3
                                            : DT_OTHER;
        size_t esize = header_dtype_size(dt->string);
        if (esize == 0)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s: unknown dtype %s", file.c_str(), name,
                        dt->string.c_str());
        for (const auto &d : shape->items) {
            if (!d.is_integer || d.integer < 0 || d.integer > ((int64_t)1 << 40))
                return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s: bad shape", file.c_str(), name);
            t.shape.push_back(d.integer);
            t.numel *= d.integer;
            if (t.numel > ((int64_t)1 << 40))
                return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s: too many elements", file.c_str(), name);
        }
        const JsonValue &b = offs->items[0], &e = offs->items[1];
        if (!b.is_integer || !e.is_integer || b.integer < 0 || e.integer < b.integer || (uint64_t)e.integer > data_len)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s: data_offsets out of range", file.c_str(), name);
        t.nbytes = (size_t)(e.integer - b.integer);
        if ((uint64_t)t.numel * esize != t.nbytes)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s: %zu bytes for %lld elements of %s", file.c_str(),
                        name, t.nbytes, (long long)t.numel, dt->string.c_str());
        t.data = data + b.integer;
        if (out->count(m.first))
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s appears twice", file.c_str(), name);
        (*out)[m.first] = std::move(t);
    }
    return ENG_STATUS_OK;
}

int32_t read_text_file(const std::string &path, std::string *out) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(ENG_STATUS_IO, "cannot open %s: %s", path.c_str(), strerror(errno));
    out->clear();
    char buf[65536];
    while (true) {
        ssize_t r = ::read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            ::close(fd);
            return fail(ENG_STATUS_IO, "cannot read %s: %s", path.c_str(), strerror(e));
        }
        if (r == 0) break;
        out->append(buf, (size_t)r);
    }
    ::close(fd);
    return ENG_STATUS_OK;
}

Checkpoint::~Checkpoint() {
    for (auto &m : maps_) munmap(m.addr, m.len);
}

int32_t Checkpoint::map_only(const std::string &path, const uint8_t **base, size_t *len_out) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(ENG_STATUS_IO, "cannot open %s: %s", path.c_str(), strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        return fail(ENG_STATUS_IO, "cannot stat %s: %s", path.c_str(), strerror(e));
    }
    size_t len = (size_t)st.st_size;
    if (len == 0) {
        ::close(fd);
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s is empty", path.c_str());
    }
    void *addr = mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    ::close(fd);
    if (addr == MAP_FAILED) return fail(ENG_STATUS_IO, "cannot map %s: %s", path.c_str(), strerror(e));
    maps_.push_back({addr, len});
    *base = (const uint8_t *)addr;
    *len_out = len;
    return ENG_STATUS_OK;
}

int32_t Checkpoint::map_file(const std::string &path) {
    const uint8_t *base = nullptr;
    size_t len = 0;
    ENG_TRY(map_only(path, &base, &len));
    return safetensors_parse(base, len, path, &tensors_);
}

void Checkpoint::release_pages() const {
    for (const auto &m : maps_) madvise(m.addr, m.len, MADV_DONTNEED);
}

static bool ends_with(const std::string &s, const char *tail) {
    size_t n = strlen(tail);
    return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

/* split.* keys (llama.cpp's gguf-split): u16 split.no, u16 split.count, i32 split.tensors.count. */
static int32_t split_key(const GgufFile &f, const char *key, const std::string &file, int64_t *out) {
    const GgufValue *v = f.get(key);
    if (!v) return 0;
    if (v->type == GGUF_STRING || v->type == GGUF_ARRAY || v->type == GGUF_F32 || v->type == GGUF_F64 || v->i < 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: %s is not a non-negative integer", file.c_str(), key);
    *out = v->i;
    return 1;
}

/* A .gguf file, or the first of a split set (NAME-00001-of-0000N.gguf; the others are found beside it). */
int32_t Checkpoint::open_gguf(const std::string &path) {
    is_gguf_ = true;
    GgufFile f;
    const uint8_t *base = nullptr;
    size_t len = 0;
    ENG_TRY(map_only(path, &base, &len));
    ENG_TRY(gguf_parse(base, len, path, 0, &f));
    int64_t count = 1, no = 0, total = -1;
    ENG_TRY(split_key(f, "split.count", path, &count));
    ENG_TRY(split_key(f, "split.no", path, &no));
    int32_t has_total = split_key(f, "split.tensors.count", path, &total);
    ENG_TRY(has_total);
    if (no != 0)
        return fail(ENG_STATUS_BAD_CHECKPOINT,
                    "%s is part %lld of a split GGUF set: open its first file (-00001-of-...)", path.c_str(),
                    (long long)no + 1);
    if (count > 1) {
        char tail[48];
        snprintf(tail, sizeof tail, "-00001-of-%05lld.gguf", (long long)count);
        if (!ends_with(path, tail))
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: split.count is %lld but the name does not end in %s",
                        path.c_str(), (long long)count, tail);
        if (count > 9999)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: split.count %lld", path.c_str(), (long long)count);
        std::string prefix = path.substr(0, path.size() - strlen(tail));
        for (int64_t i = 1; i < count; i++) {
            char part[64];
            snprintf(part, sizeof part, "-%05lld-of-%05lld.gguf", (long long)i + 1, (long long)count);
            std::string p = prefix + part;
            GgufFile fi;
            ENG_TRY(map_only(p, &base, &len));
            ENG_TRY(gguf_parse(base, len, p, (int)i, &fi));
            int64_t pno = -1, pcount = -1;
            ENG_TRY(split_key(fi, "split.no", p, &pno));
            ENG_TRY(split_key(fi, "split.count", p, &pcount));
            if (pno != i || pcount != count)
                return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: split.no %lld / split.count %lld, expected %lld / %lld",
                            p.c_str(), (long long)pno, (long long)pcount, (long long)i, (long long)count);
            for (GgufTensor &t : fi.tensors) {
                for (const GgufTensor &u : f.tensors)
                    if (u.name == t.name)
                        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: tensor %s is also in an earlier part", p.c_str(),
                                    t.name.c_str());
                f.tensors.push_back(std::move(t));
            }
        }
    }
    if (has_total && (int64_t)f.tensors.size() != total)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: split.tensors.count is %lld but the parts hold %zu tensors",
                    path.c_str(), (long long)total, f.tensors.size());
    GgufBound b;
    ENG_TRY(gguf_bind(f, path, &b));
    config_ = std::move(b.config);
    tensors_ = std::move(b.tensors);
    source_ = std::move(b.source);
    owned_ = std::move(b.owned);
    is_qk_permuted_ = b.is_qk_permuted;
    return ENG_STATUS_OK;
}

int32_t Checkpoint::open(const std::string &dir) {
    struct stat st;
    if (ends_with(dir, ".gguf") && ::stat(dir.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return open_gguf(dir);
    std::string text, err;
    ENG_TRY(read_text_file(dir + "/config.json", &text));
    if (!json_parse(text.data(), text.size(), &config_, &err))
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s/config.json: %s", dir.c_str(), err.c_str());
    if (config_.kind != JsonValue::OBJECT)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s/config.json is not a JSON object", dir.c_str());

    std::string single = dir + "/model.safetensors";
    if (access(single.c_str(), F_OK) == 0) return map_file(single);

    std::string index_path = dir + "/model.safetensors.index.json";
    if (access(index_path.c_str(), F_OK) != 0)
        return fail(ENG_STATUS_IO, "%s has neither model.safetensors nor model.safetensors.index.json", dir.c_str());
    ENG_TRY(read_text_file(index_path, &text));
    JsonValue index;
    if (!json_parse(text.data(), text.size(), &index, &err))
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: %s", index_path.c_str(), err.c_str());
    const JsonValue *wm = index.get("weight_map");
    if (!wm || wm->kind != JsonValue::OBJECT)
        return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: no weight_map object", index_path.c_str());
    std::set<std::string> shards;
    for (const auto &m : wm->members) {
        if (m.second.kind != JsonValue::STRING || m.second.string.empty() ||
            m.second.string.find('/') != std::string::npos)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "%s: bad shard name for %s", index_path.c_str(), m.first.c_str());
        shards.insert(m.second.string);
    }
    for (const auto &s : shards) ENG_TRY(map_file(dir + "/" + s));
    for (const auto &m : wm->members)
        if (!tensors_.count(m.first))
            return fail(ENG_STATUS_BAD_CHECKPOINT, "tensor %s listed in the index is missing from %s", m.first.c_str(),
                        m.second.string.c_str());
    return ENG_STATUS_OK;
}

const Tensor *Checkpoint::find(const std::string &name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

static std::string shape_str(const std::vector<int64_t> &s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

int32_t Checkpoint::require(const std::string &name, std::initializer_list<int64_t> shape, const Tensor **out) const {
    const Tensor *t = find(name);
    // GGUF: name the file's tensor (its shape innermost first, as llama.cpp prints it).
    auto src = source_.find(name);
    std::string shown = src == source_.end() ? name : src->second + " (" + name + ")";
    if (!t) {
        if (is_gguf_)
            return fail(ENG_STATUS_BAD_CHECKPOINT, "missing tensor: the GGUF file has no tensor for %s", name.c_str());
        return fail(ENG_STATUS_BAD_CHECKPOINT, "missing tensor %s", name.c_str());
    }
    std::vector<int64_t> want(shape);
    if (t->shape != want) {
        if (src != source_.end()) {
            std::vector<int64_t> got(t->shape.rbegin(), t->shape.rend()), exp(want.rbegin(), want.rend());
            return fail(ENG_STATUS_BAD_CHECKPOINT,
                        "tensor %s has shape %s, but the metadata gives %s (extents innermost first)", shown.c_str(),
                        shape_str(got).c_str(), shape_str(exp).c_str());
        }
        return fail(ENG_STATUS_BAD_CHECKPOINT, "tensor %s has shape %s, expected %s", name.c_str(),
                    shape_str(t->shape).c_str(), shape_str(want).c_str());
    }
    if (t->dtype == DT_OTHER)
        return fail(ENG_STATUS_UNSUPPORTED,
                    "tensor %s has unsupported dtype %s (BF16, F16, F32, F8_E4M3 are supported)", shown.c_str(),
                    t->dtype_str.c_str());
    *out = t;
    return ENG_STATUS_OK;
}

} // namespace maya
