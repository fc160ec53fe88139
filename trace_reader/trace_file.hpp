// A trace file's bytes as the reader takes them: read raw in large blocks, each block hashed (SHA-256, where the build
// has OpenSSL's libcrypto: ob-analyze's metadata digest then costs no second read of the file), and inflated where
// the file is gzipped (zlib's inflate over every member, as gzread does; bytes after the last member ignored, as
// gzread ignores them); a plain file is read straight into the caller's buffer (after its first block, which told
// gzip from plain) and hashed there. In a header: kineto_reader.cpp is its one user.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include <zlib.h>

#include "trace_reader/columns.hpp"

#ifdef OB_TRACE_SHA256
#include <openssl/evp.h>
#endif

namespace ob::trace {

class TraceFile {
 public:
  explicit TraceFile(const std::string& path);  // throws std::runtime_error where it cannot be opened
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  // Up to `size` bytes of the text into `out`; 0 at its end. Throws Unhandled where the gzip stream is broken.
  size_t read(char* out, size_t size);
  bool gzipped() const { return gzipped_; }
  // The file's SHA-256 in hex once read to its end, "" where the build has no libcrypto.
  std::string sha256();

 private:
  bool fill();  // the next raw block; false at the end of the file
  std::unique_ptr<FILE, int (*)(FILE*)> file_;
  std::unique_ptr<unsigned char[]> raw_;
  size_t raw_size_ = 0, raw_at_ = 0;
  bool gzipped_ = false, member_done_ = false, ended_ = false;
  z_stream zs_{};
  struct Hash;
  std::unique_ptr<Hash> hash_;
};

inline constexpr size_t kRawBlock = size_t{1} << 20;

struct TraceFile::Hash {
#ifdef OB_TRACE_SHA256
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  Hash() {
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 unavailable");
  }
  ~Hash() { EVP_MD_CTX_free(ctx); }
  void update(const unsigned char* data, size_t size) { EVP_DigestUpdate(ctx, data, size); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_DigestFinal_ex(ctx, digest, &size);
    static const char kHex[] = "0123456789abcdef";
    std::string text;
    for (unsigned i = 0; i < size; ++i) text.append({kHex[digest[i] >> 4], kHex[digest[i] & 15]});
    return text;
  }
#else
  void update(const unsigned char*, size_t) {}
  std::string hex() { return ""; }
#endif
};

inline TraceFile::TraceFile(const std::string& path)
    : file_(std::fopen(path.c_str(), "rb"), &std::fclose), raw_(new unsigned char[kRawBlock]), hash_(new Hash) {
  if (!file_) throw std::runtime_error(path + ": cannot open it");
  fill();
  gzipped_ = raw_size_ >= 2 && raw_[0] == 0x1f && raw_[1] == 0x8b;
  if (gzipped_ && inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error("zlib: cannot start inflate");
}

inline TraceFile::~TraceFile() {
  if (gzipped_) inflateEnd(&zs_);
}

inline bool TraceFile::fill() {
  raw_size_ = std::fread(raw_.get(), 1, kRawBlock, file_.get());
  raw_at_ = 0;
  if (std::ferror(file_.get())) throw std::runtime_error("reading the trace failed");
  hash_->update(raw_.get(), raw_size_);
  return raw_size_ > 0;
}

inline size_t TraceFile::read(char* out, size_t size) {
  if (!gzipped_) {  // the first block's rest, then straight from the file into `out`, hashed there
    size_t got = std::min(size, raw_size_ - raw_at_);
    std::memcpy(out, raw_.get() + raw_at_, got);
    raw_at_ += got;
    while (got < size && !ended_) {
      size_t n = std::fread(out + got, 1, size - got, file_.get());
      if (std::ferror(file_.get())) throw std::runtime_error("reading the trace failed");
      hash_->update(reinterpret_cast<const unsigned char*>(out + got), n);
      got += n;
      if (n == 0) ended_ = true;
    }
    return got;
  }
  zs_.next_out = reinterpret_cast<Bytef*>(out);
  zs_.avail_out = static_cast<uInt>(size);
  while (zs_.avail_out > 0 && !ended_) {
    if (raw_at_ == raw_size_ && !fill()) {
      if (!member_done_) throw Unhandled("gzip: unexpected end of file");
      ended_ = true;
      break;
    }
    if (member_done_) {  // another member follows, or bytes gzread ignores
      if (raw_size_ - raw_at_ < 2 && raw_at_ + 1 == raw_size_) {
        unsigned char first = raw_[raw_at_];
        if (!fill() || first != 0x1f || raw_[0] != 0x8b) {
          ended_ = true;
          break;
        }
      } else if (raw_[raw_at_] != 0x1f || raw_[raw_at_ + 1] != 0x8b) {
        ended_ = true;
        break;
      }
      inflateReset(&zs_);
      if (raw_at_ == 0 && raw_size_ > 0 && raw_[0] == 0x8b) {  // the magic's first byte was the last block's
        static const unsigned char kFirst = 0x1f;
        zs_.next_in = const_cast<Bytef*>(&kFirst);
        zs_.avail_in = 1;
        inflate(&zs_, Z_NO_FLUSH);
      }
      member_done_ = false;
    }
    zs_.next_in = raw_.get() + raw_at_;
    zs_.avail_in = static_cast<uInt>(raw_size_ - raw_at_);
    int code = inflate(&zs_, Z_NO_FLUSH);
    raw_at_ = raw_size_ - zs_.avail_in;
    if (code == Z_STREAM_END) {
      member_done_ = true;
    } else if (code != Z_OK && code != Z_BUF_ERROR) {
      throw Unhandled(std::string("gzip: ") + (zs_.msg ? zs_.msg : "broken stream"));
    }
  }
  return size - zs_.avail_out;
}

inline std::string TraceFile::sha256() {
  while (fill()) {}
  return hash_->hex();
}

}  // namespace ob::trace
