// Ballistic — the snapshot format's byte streams (byte_stream.hpp).
#include "base/byte_stream.hpp"

#include "base/format.hpp"
#include "base/validate.hpp"

#include <cmath>

namespace ballistic::detail {

void bad_snapshot(const std::string& what) { reject("snapshot", what); }

std::uint64_t fnv1a(std::uint64_t hash, const char* bytes, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) hash = (hash ^ static_cast<unsigned char>(bytes[k])) * 0x100000001b3ull;
    return hash;
}

void SnapshotWriter::write(const char* bytes, std::size_t count) {
    hash_ = fnv1a(hash_, bytes, count);
    out_.write(bytes, static_cast<std::streamsize>(count));
}

void SnapshotWriter::put_checksum() {
    const std::uint64_t hash = hash_;
    put(hash);
}

void SnapshotReader::read(char* bytes, std::size_t count, const char* what) {
    in_.read(bytes, static_cast<std::streamsize>(count));
    if (static_cast<std::size_t>(in_.gcount()) != count)
        bad_snapshot("ends early, at byte " + std::to_string(offset_ + static_cast<std::uint64_t>(in_.gcount())) + " (reading " +
            what + ")");
    offset_ += count;
    hash_ = fnv1a(hash_, bytes, count);
}

void SnapshotReader::check_checksum() {
    const std::uint64_t expected = hash_;
    if (get<std::uint64_t>("checksum") != expected) bad_snapshot("checksum mismatch: the file is damaged");
}

double SnapshotReader::finite(const char* what) {
    const double v = get<double>(what);
    if (!std::isfinite(v)) bad_snapshot(std::string(what) + " is " + show(v));
    return v;
}

Vec3 SnapshotReader::finite_vec(const char* what) {
    const double x = finite(what), y = finite(what), z = finite(what);
    return {x, y, z};
}

std::size_t SnapshotReader::count(const char* what, std::uint64_t limit) {
    const auto n = get<std::uint64_t>(what);
    if (n > limit) bad_snapshot(std::string(what) + " " + std::to_string(n) + " exceeds " + std::to_string(limit));
    return static_cast<std::size_t>(n);
}

}  // namespace ballistic::detail
