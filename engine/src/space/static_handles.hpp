// Ballistic — the handles of the statics: for each kind (planes, cylinders, capsules, blocks), the
// table of its handles and the handle of the static at each index of Statics.
//
// Invariant: ids<Id>()[k] is the live handle of the static at index k of its kind, and the table
// maps it back to k.
#pragma once

#include "space/handles.hpp"
#include "space/statics.hpp"

#include <ballistic/types.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ballistic::detail {

class StaticHandles {
public:
    // One kind's table and ids.
    template <class Id>
    struct Kind {
        Handles<Id> handles;
        std::vector<Id> ids;
    };

    template <class Id>
    Kind<Id>& of() { return std::get<Kind<Id>>(kinds_); }
    template <class Id>
    const Kind<Id>& of() const { return std::get<Kind<Id>>(kinds_); }
    template <class Id>
    bool contains(Id id) const { return of<Id>().handles.contains(id); }
    // The index of a live static; throws InvalidArgument under `field` ("plane", …) otherwise.
    template <class Id>
    std::uint32_t index(Id id, const char* field) const { return of<Id>().handles.slot(id, field); }
    // The handle of the static at `index`; throws InvalidArgument under `field` past the last.
    template <class Id>
    Id id(std::uint32_t index, const char* field) const {
        const std::vector<Id>& ids = of<Id>().ids;
        if (index >= ids.size()) reject(field, std::string("no ") + field + " with index " + std::to_string(index));
        return ids[index];
    }

    // Room for one more handle of the kind, so that issue() cannot fail.
    template <class Id>
    void reserve_one() {
        Kind<Id>& kind = of<Id>();
        kind.handles.reserve(1);
        reserve_for(kind.ids, kind.ids.size() + 1);
    }
    // A handle for the static just added at `index` (after reserve_one(): never fails).
    template <class Id>
    Id issue(std::uint32_t index) {
        Kind<Id>& kind = of<Id>();
        kind.ids.push_back(kind.handles.issue(index));
        return kind.ids.back();
    }
    // After the static at `index` was removed (the last of its kind took its index): its handle
    // released (handles.reserve_release() called first), the last one's moved. Never fails.
    template <class Id>
    void drop(std::uint32_t index) noexcept {
        Kind<Id>& kind = of<Id>();
        kind.handles.release(kind.ids[index]);
        kind.ids[index] = kind.ids.back();
        kind.ids.pop_back();
        if (index < kind.ids.size()) kind.handles.moved(kind.ids[index], index);
    }

    // Snapshots: per kind, the ids and the table. restore() reads them for `counts` statics.
    void save(SnapshotWriter& out) const {
        std::apply([&](const auto&... kind) { (write(out, kind), ...); }, kinds_);
    }
    void restore(SnapshotReader& in, const StaticCounts& counts) {
        read(in, counts.planes, of<PlaneId>());
        read(in, counts.cylinders, of<CylinderId>());
        read(in, counts.capsules, of<CapsuleId>());
        read(in, counts.blocks, of<BlockId>());
    }

private:
    template <class Id>
    static void write(SnapshotWriter& out, const Kind<Id>& kind) {
        for (const Id id : kind.ids) out.put(id.value);
        kind.handles.write(out);
    }
    template <class Id>
    static void read(SnapshotReader& in, std::size_t n, Kind<Id>& kind) {
        const std::vector<std::uint64_t> values = in.get_column<std::uint64_t>(n, "static handles");
        kind.ids.resize(n);
        for (std::size_t k = 0; k < n; ++k) kind.ids[k].value = values[k];
        kind.handles.read(in, std::span(std::as_const(kind.ids)));
    }

    std::tuple<Kind<PlaneId>, Kind<CylinderId>, Kind<CapsuleId>, Kind<BlockId>> kinds_;
};

}  // namespace ballistic::detail
