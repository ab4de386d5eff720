// Ballistic — the snapshot format's byte streams (World::save, World::restore; docs/architecture.md,
// "Snapshots"). Values are written in the host's byte order, which the header records; every
// byte before the end goes into a 64-bit FNV-1a checksum written at the end. The Reader
// refuses a short file, and reads lists in chunks, so that a count it was lied to about costs at
// most the bytes the file really has.
#pragma once

#include <ballistic/vec3.hpp>

#include <cstdint>
#include <cstring>
#include <istream>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

namespace ballistic::detail {

class SnapshotWriter {
public:
    explicit SnapshotWriter(std::ostream& out) : out_(out) {}

    template <class T>
    void put(T value) {
        static_assert(std::is_arithmetic_v<T>);
        char bytes[sizeof(T)];
        std::memcpy(bytes, &value, sizeof(T));
        write(bytes, sizeof(T));
    }
    void put(Vec3 v) { put(v.x); put(v.y); put(v.z); }
    template <class T, class A>
    void put_column(const std::vector<T, A>& column) {
        static_assert(std::is_arithmetic_v<T>);
        write(reinterpret_cast<const char*>(column.data()), column.size() * sizeof(T));
    }
    void write(const char* bytes, std::size_t count);
    void put_checksum();  // the checksum of everything written so far
    bool failed() const { return out_.fail(); }

private:
    std::ostream& out_;
    std::uint64_t hash_ = 0xcbf29ce484222325ull;
};

// Throws InvalidArgument under the field "snapshot": what is wrong with the file.
[[noreturn]] void bad_snapshot(const std::string& what);

// Throws InvalidArgument under the field "snapshot" for a file that ends early, and for a value
// its checked getters refuse.
class SnapshotReader {
public:
    explicit SnapshotReader(std::istream& in) : in_(in) {}

    template <class T>
    T get(const char* what) {
        static_assert(std::is_arithmetic_v<T>);
        char bytes[sizeof(T)];
        read(bytes, sizeof(T), what);
        T value;
        std::memcpy(&value, bytes, sizeof(T));
        return value;
    }
    Vec3 get_vec(const char* what) {
        const double x = get<double>(what), y = get<double>(what), z = get<double>(what);
        return {x, y, z};
    }
    double finite(const char* what);   // refuses NaN and infinities
    Vec3 finite_vec(const char* what);
    std::size_t count(const char* what, std::uint64_t limit);  // a count of at most `limit`
    // `count` values, read in chunks.
    template <class T, class A = std::allocator<T>>
    std::vector<T, A> get_column(std::size_t count, const char* what) {
        static_assert(std::is_arithmetic_v<T>);
        std::vector<T, A> column;
        constexpr std::size_t kChunk = 1 << 16;
        for (std::size_t done = 0; done < count;) {
            const std::size_t n = std::min(kChunk, count - done);
            column.resize(done + n);
            read(reinterpret_cast<char*>(column.data() + done), n * sizeof(T), what);
            done += n;
        }
        return column;
    }
    template <class T, class A>  // the same into `column`, whatever its allocator
    void get_column(std::vector<T, A>& column, std::size_t count, const char* what) {
        column = get_column<T, A>(count, what);
    }
    void read(char* bytes, std::size_t count, const char* what);
    void check_checksum();  // the checksum written after what was read matches it
    std::uint64_t offset() const { return offset_; }

private:
    std::istream& in_;
    std::uint64_t hash_ = 0xcbf29ce484222325ull;
    std::uint64_t offset_ = 0;
};

// FNV-1a over bytes, continuing from `hash`.
std::uint64_t fnv1a(std::uint64_t hash, const char* bytes, std::size_t count);

}  // namespace ballistic::detail
