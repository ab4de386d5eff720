// Ballistic — scene files and run statistics.
#include <ballistic/scene/scene.hpp>

#include <ballistic/generate.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <sstream>
#include <system_error>

namespace ballistic::scene {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Errors

std::string format(const char* pattern, double value) {
    std::array<char, 64> text{};
    std::snprintf(text.data(), text.size(), pattern, value);
    return text.data();
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw InvalidArgument(path, (path.empty() ? std::string("scene") : path) + ": " + what);
}

// The length of the well-formed UTF-8 sequence of more than one byte at the start of `text`
// (RFC 3629: no overlong forms, no surrogates, nothing beyond U+10FFFF), or 0.
std::size_t utf8_sequence(std::string_view text) {
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = at(0);
    const std::size_t length = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3
                             : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    if (length == 0 || text.size() < length) return 0;
    const unsigned char low = lead == 0xe0 ? 0xa0 : lead == 0xf0 ? 0x90 : 0x80;
    const unsigned char high = lead == 0xed ? 0x9f : lead == 0xf4 ? 0x8f : 0xbf;
    if (at(1) < low || at(1) > high) return 0;
    for (std::size_t k = 2; k < length; ++k)
        if (at(k) < 0x80 || at(k) > 0xbf) return 0;
    return length;
}

// A key as error messages name it: a long one cut short, so that a huge key is not echoed whole.
// Text from the file as a message shows it: control characters escaped as JSON writes them
// (\u0000: a NUL would end the message), bytes that are not UTF-8 as \xff, cut to about `limit`
// bytes with the full length given.
std::string shown_text(std::string_view text, std::size_t limit) {
    constexpr char kHex[] = "0123456789abcdef";
    const std::size_t size = text.size();
    if (size > limit) text = text.substr(0, limit - 16);
    std::string out;
    for (std::size_t k = 0; k < text.size();) {
        const auto byte = static_cast<unsigned char>(text[k]);
        if (byte >= 0x80) {
            if (const std::size_t length = utf8_sequence(text.substr(k)); length > 0) {
                out += text.substr(k, length);
                k += length;
                continue;
            }
        }
        if (byte < 0x20 || byte >= 0x7f) {
            out += byte >= 0x80 ? "\\x" : "\\u00";
            out += kHex[byte >> 4];
            out += kHex[byte & 15];
        } else {
            out += text[k];
        }
        ++k;
    }
    if (size > limit) out += "...(" + std::to_string(size) + " bytes)";
    return out;
}

std::string shown_key(std::string_view key) { return shown_text(key, 64); }

std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? shown_key(key) : path + "." + shown_key(key);
}

std::string element(const std::string& path, std::size_t index) {
    return path + "[" + std::to_string(index) + "]";
}

// A value as it appears in the file, shortened: error messages quote what they rejected.
std::string quote(const json& value) {
    std::string text = value.dump();
    constexpr std::size_t kLimit = 40;
    if (text.size() > kLimit) text = text.substr(0, kLimit - 3) + "...";
    return text;
}

// The engine names fields after its own objects and lists ("world.restitution", "plane.normal",
// "balls[3].radius"); scene errors must name the place in the file. Keeps the engine's
// explanation under `field`.
[[noreturn]] void rethrow_as(const InvalidArgument& error, const std::string& field) {
    std::string message = error.what();
    if (!error.field().empty() && message.starts_with(error.field() + ": ")) {
        message.erase(0, error.field().size() + 2);
    }
    fail(field, message);
}

// Last component of an engine field ("normal" of "plane.normal"); empty for a bare "plane".
std::string leaf(const std::string& field) {
    const std::size_t dot = field.rfind('.');
    return dot == std::string::npos ? std::string() : field.substr(dot + 1);
}

[[noreturn]] void rethrow_under(const InvalidArgument& error, const std::string& path) {
    const std::string name = leaf(error.field());
    rethrow_as(error, name.empty() ? path : join(path, name));
}

// ---------------------------------------------------------------------------------------------
// JSON text → DOM, with positions for syntax errors and rejection of duplicate keys (a plain
// parse silently keeps the last of two equal keys, hiding typos in hand-written scenes).

class DomBuilder final : public nlohmann::json_sax<json> {
public:
    json& root() { return root_; }
    const std::string& duplicate() const { return duplicate_; }
    const std::optional<std::string>& too_deep() const { return too_deep_; }
    std::size_t error_position() const { return error_position_; }
    const std::string& error_message() const { return error_message_; }

    bool null() override { return put(json(nullptr)); }
    bool boolean(bool value) override { return put(json(value)); }
    bool number_integer(number_integer_t value) override { return put(json(value)); }
    bool number_unsigned(number_unsigned_t value) override { return put(json(value)); }
    bool number_float(number_float_t value, const string_t&) override { return put(json(value)); }
    bool string(string_t& value) override { return put(json(value)); }
    bool binary(binary_t& value) override { return put(json(value)); }
    bool start_object(std::size_t) override { return open(json::object()); }
    bool start_array(std::size_t) override { return open(json::array()); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool key(string_t& name) override {
        if (stack_.back()->contains(name)) {
            duplicate_ = join(paths_.back(), name);
            return false;
        }
        key_ = name;
        return true;
    }

    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception& error) override {
        error_position_ = position;
        error_message_ = error.what();
        return false;
    }

private:
    std::string child_path() const {
        if (stack_.empty()) return {};
        const json& parent = *stack_.back();
        return parent.is_array() ? element(paths_.back(), parent.size()) : join(paths_.back(), key_);
    }

    json* insert(json value) {
        if (stack_.empty()) {
            root_ = std::move(value);
            return &root_;
        }
        json& parent = *stack_.back();
        if (parent.is_array()) {
            parent.push_back(std::move(value));
            return &parent.back();
        }
        json& slot = parent[key_];
        slot = std::move(value);
        return &slot;
    }

    bool put(json value) {
        insert(std::move(value));
        return true;
    }

    bool open(json container) {
        if (stack_.size() >= kMaxJsonDepth) {
            too_deep_ = child_path();
            return false;
        }
        std::string path = child_path();
        stack_.push_back(insert(std::move(container)));
        paths_.push_back(std::move(path));
        return true;
    }

    bool close() {
        stack_.pop_back();
        paths_.pop_back();
        return true;
    }

    json root_;
    std::vector<json*> stack_;        // open containers; pointers stay valid: only the innermost grows
    std::vector<std::string> paths_;  // their JSON paths
    std::string key_;
    std::string duplicate_;
    std::optional<std::string> too_deep_;  // the path of the container nested too deep
    std::size_t error_position_ = 0;
    std::string error_message_;
};

// nlohmann's messages read "[json.exception.parse_error.101] parse error at line 3, column 4:
// syntax error while parsing ..."; keep only the explanation, the position is reported by us.
std::string syntax_explanation(const std::string& message) {
    std::size_t start = message.find("] ");
    start = start == std::string::npos ? 0 : start + 2;
    if (const std::size_t column = message.find("column ", start); column != std::string::npos) {
        if (const std::size_t colon = message.find(": ", column); colon != std::string::npos) {
            start = colon + 2;
        }
    }
    return shown_text(std::string_view(message).substr(start), 200);
}

[[noreturn]] void fail_syntax(std::string_view text, std::size_t position, const std::string& message) {
    const std::string_view before = text.substr(0, std::min(position, text.size()));
    const auto line = 1 + std::count(before.begin(), before.end(), '\n');
    const std::size_t line_start = before.rfind('\n');
    const std::size_t column = before.size() - (line_start == std::string_view::npos ? 0 : line_start + 1);
    fail("", "line " + std::to_string(line) + ", column " + std::to_string(column) +
                 ": invalid JSON: " + syntax_explanation(message));
}

json parse_json(std::string_view text) {
    DomBuilder builder;
    if (json::sax_parse(text, &builder)) return std::move(builder.root());
    if (!builder.duplicate().empty()) fail(builder.duplicate(), "duplicate key");
    if (builder.too_deep())
        fail(*builder.too_deep(), "nested deeper than " + std::to_string(kMaxJsonDepth) +
                                      " arrays and objects (the limit on JSON depth)");
    fail_syntax(text, builder.error_position(), builder.error_message());
}

// ---------------------------------------------------------------------------------------------
// Typed reads. Each names the JSON path of what it rejects.

void expect_keys(const json& object, const std::string& path,
                 std::initializer_list<std::string_view> allowed) {
    if (!object.is_object()) fail(path, "expected an object, got " + quote(object));
    for (const auto& item : object.items()) {
        if (std::find(allowed.begin(), allowed.end(), item.key()) != allowed.end()) continue;
        std::string list;
        for (const std::string_view name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
        fail(join(path, item.key()), "unknown key (expected one of: " + list + ")");
    }
}

const json* optional_key(const json& object, std::string_view key) {
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

const json& required_key(const json& object, const std::string& path, std::string_view key) {
    const json* value = optional_key(object, key);
    if (value == nullptr) fail(join(path, key), "missing (required)");
    return *value;
}

double read_number(const json& value, const std::string& path) {
    if (!value.is_number()) fail(path, "expected a number, got " + quote(value));
    const double number = value.get<double>();
    if (!std::isfinite(number)) fail(path, "must be finite, got " + quote(value));
    return number;
}

Vec3 read_vec3(const json& value, const std::string& path) {
    const bool shape = value.is_array() && value.size() == 3 &&
                       std::all_of(value.begin(), value.end(), [](const json& x) { return x.is_number(); });
    if (!shape) fail(path, "expected an array of 3 numbers, got " + quote(value));
    return {read_number(value[0], element(path, 0)), read_number(value[1], element(path, 1)),
            read_number(value[2], element(path, 2))};
}

// Whole number from `least` up to `limit`; written as an integer or as an integral float (1e5).
std::uint64_t read_whole(const json& value, const std::string& path, double limit, std::uint64_t least = 0) {
    const std::string too_small = "must be >= " + std::to_string(least) + ", got " + quote(value);
    if (value.is_number_unsigned()) {
        const auto whole = value.get<std::uint64_t>();
        // Below 2^64 every limit is a power of two or below 2^53, where the conversion is exact.
        if (limit < 0x1p64 && !(static_cast<double>(whole) < limit))
            fail(path, "must be below " + format("%.17g", limit) + ", got " + quote(value));
        if (whole < least) fail(path, too_small);
        return whole;
    }
    if (!value.is_number()) fail(path, "expected a non-negative integer, got " + quote(value));
    const double number = value.get<double>();
    if (number < static_cast<double>(least)) fail(path, too_small);
    if (number != std::floor(number) || !(number < limit)) {
        fail(path, "expected a non-negative integer, got " + quote(value));
    }
    return static_cast<std::uint64_t>(number);
}

bool read_bool(const json& value, const std::string& path) {
    if (!value.is_boolean()) fail(path, "expected true or false, got " + quote(value));
    return value.get<bool>();
}

const json& read_list(const json& value, const std::string& path) {
    if (!value.is_array()) fail(path, "expected an array of objects, got " + quote(value));
    return value;
}

Box read_box(const json& value, const std::string& path) {
    expect_keys(value, path, {"min", "max"});
    const Box box{read_vec3(required_key(value, path, "min"), join(path, "min")),
                  read_vec3(required_key(value, path, "max"), join(path, "max"))};
    if (!(box.min.x < box.max.x && box.min.y < box.max.y && box.min.z < box.max.z)) {
        fail(join(path, "max"), "must be greater than " + join(path, "min") + " on every axis, got min " +
                                    quote(value["min"]) + " and max " + quote(value["max"]));
    }
    return box;
}

// ---------------------------------------------------------------------------------------------
// Scene construction, in the documented order: world, box planes, planes, cylinders, capsules,
// blocks, balls,
// generated balls (which are placed clear of everything added before them).

World make_world(const json& root, const LoadOptions& options) {
    WorldDef def;
    if (const json* v = optional_key(root, "gravity")) def.gravity = read_vec3(*v, "gravity");
    if (const json* v = optional_key(root, "restitution")) def.restitution = read_number(*v, "restitution");
    if (const json* v = optional_key(root, "time")) def.time = read_number(*v, "time");
    if (const json* v = optional_key(root, "rest_speed")) def.rest_speed = read_number(*v, "rest_speed");
    if (const json* v = optional_key(root, "sleep_speed")) def.sleep_speed = read_number(*v, "sleep_speed");
    if (const json* v = optional_key(root, "sleep_time")) def.sleep_time = read_number(*v, "sleep_time");
    if (const json* v = optional_key(root, "sleep_events"))
        def.sleep_events = static_cast<std::uint32_t>(read_whole(*v, "sleep_events", 4294967296.0, 1));
    if (const json* v = optional_key(root, "sleep_friction")) def.sleep_friction = read_number(*v, "sleep_friction");
    if (const json* v = optional_key(root, "sleep_interval")) def.sleep_interval = read_number(*v, "sleep_interval");
    if (const json* v = optional_key(root, "wake_lift")) def.wake_lift = read_number(*v, "wake_lift");
    if (const json* v = optional_key(root, "friction")) def.friction = read_number(*v, "friction");
    if (const json* v = optional_key(root, "periodic")) {
        expect_keys(*v, "periodic", {"min", "max", "axes"});
        json box = *v;
        box.erase("axes");
        def.periodic = read_box(box, "periodic");
        if (const json* axes = optional_key(*v, "axes")) {
            if (!axes->is_array() || axes->size() != 3) fail("periodic.axes", "expected an array of 3 booleans, got " + quote(*axes));
            for (std::size_t d = 0; d < 3; ++d) def.periodic_axes[d] = read_bool((*axes)[d], element("periodic.axes", d));
        }
    }
    def.threads = options.threads;
    def.memory_limit = options.memory_limit;
    def.regions_when_faster = options.regions_when_faster;
    try {
        return World(def);
    } catch (const InvalidArgument& error) {
        // "world.periodic.min" is "periodic.min" in the file.
        const std::string& field = error.field();
        rethrow_as(error, field.starts_with("world.") ? field.substr(6) : field);
    }
}

// Six inward-facing planes: −x, +x, −y, +y, −z, +z faces, in that order.
void add_box(World& world, const json& value) {
    const Box box = read_box(value, "box");
    const std::array<PlaneDef, 6> faces{{{box.min, {1, 0, 0}},
                                         {box.max, {-1, 0, 0}},
                                         {box.min, {0, 1, 0}},
                                         {box.max, {0, -1, 0}},
                                         {box.min, {0, 0, 1}},
                                         {box.max, {0, 0, -1}}}};
    for (const PlaneDef& face : faces) {
        try {
            world.add_plane(face);
        } catch (const InvalidArgument& error) {
            rethrow_as(error, "box");
        }
    }
}

// Each element of the list `name` (an object with only the keys `keys`), read by
// `read(item, path)` and added to the world by `add(def)`; an error of the world names the
// element's path.
template <class Read, class Add>
void add_each(const json& list, const std::string& name, std::initializer_list<std::string_view> keys, Read&& read,
              Add&& add) {
    const json& items = read_list(list, name);
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string path = element(name, i);
        expect_keys(items[i], path, keys);
        const auto def = read(items[i], path);
        try {
            add(def);
        } catch (const InvalidArgument& error) {
            rethrow_under(error, path);
        }
    }
}

// The required member `key` of an element at `path`.
Vec3 vec3_at(const json& item, const std::string& path, std::string_view key) {
    return read_vec3(required_key(item, path, key), join(path, key));
}
double number_at(const json& item, const std::string& path, std::string_view key) {
    return read_number(required_key(item, path, key), join(path, key));
}

void add_planes(World& world, const json& list) {
    add_each(list, "planes", {"point", "normal"},
             [](const json& item, const std::string& path) {
                 return PlaneDef{vec3_at(item, path, "point"), vec3_at(item, path, "normal")};
             },
             [&](const PlaneDef& def) { world.add_plane(def); });
}

void add_cylinders(World& world, const json& list) {
    add_each(list, "cylinders", {"point", "axis", "radius"},
             [](const json& item, const std::string& path) {
                 return CylinderDef{vec3_at(item, path, "point"), vec3_at(item, path, "axis"),
                                    number_at(item, path, "radius")};
             },
             [&](const CylinderDef& def) { world.add_cylinder(def); });
}

void add_capsules(World& world, const json& list) {
    add_each(list, "capsules", {"a", "b", "radius"},
             [](const json& item, const std::string& path) {
                 return CapsuleDef{vec3_at(item, path, "a"), vec3_at(item, path, "b"), number_at(item, path, "radius")};
             },
             [&](const CapsuleDef& def) { world.add_capsule(def); });
}

void add_blocks(World& world, const json& list) {
    add_each(list, "blocks", {"min", "max"},
             [](const json& item, const std::string& path) {
                 return BlockDef{vec3_at(item, path, "min"), vec3_at(item, path, "max")};
             },
             [&](const BlockDef& def) { world.add_block(def); });
}

BallDef read_ball(const json& item, const std::string& path) {
    expect_keys(item, path, {"position", "velocity", "radius", "mass", "sleeping"});
    BallDef def;
    def.position = read_vec3(required_key(item, path, "position"), join(path, "position"));
    def.velocity = read_vec3(required_key(item, path, "velocity"), join(path, "velocity"));
    def.radius = read_number(required_key(item, path, "radius"), join(path, "radius"));
    if (const json* v = optional_key(item, "mass")) def.mass = read_number(*v, join(path, "mass"));
    if (const json* v = optional_key(item, "sleeping")) def.sleeping = read_bool(*v, join(path, "sleeping"));
    return def;
}

// All explicit balls go in one add_balls call, so the engine's "balls[i]" is the file's index.
std::vector<BallId> add_explicit_balls(World& world, const json& list) {
    std::vector<BallDef> defs;
    const json& items = read_list(list, "balls");
    for (std::size_t i = 0; i < items.size(); ++i) {
        defs.push_back(read_ball(items[i], element("balls", i)));
    }
    return world.add_balls(defs);
}

GenerateDef read_generate(const json& item, const std::string& path) {
    expect_keys(item, path,
                {"count", "radius", "mass", "min", "max", "speed", "temperature", "zero_momentum", "seed"});
    GenerateDef def;
    constexpr double kCountLimit = 0x1p53;  // integral doubles are exact below this
    def.count = static_cast<std::size_t>(
        read_whole(required_key(item, path, "count"), join(path, "count"), kCountLimit));
    def.radius = read_number(required_key(item, path, "radius"), join(path, "radius"));
    if (const json* v = optional_key(item, "mass")) def.mass = read_number(*v, join(path, "mass"));
    def.region.min = read_vec3(required_key(item, path, "min"), join(path, "min"));
    def.region.max = read_vec3(required_key(item, path, "max"), join(path, "max"));
    const json* speed = optional_key(item, "speed");
    const json* temperature = optional_key(item, "temperature");
    if (speed != nullptr && temperature != nullptr) {
        fail(join(path, "temperature"), "give either \"speed\" or \"temperature\", not both");
    }
    if (speed == nullptr && temperature == nullptr) {
        fail(path, "needs \"speed\" or \"temperature\" (one of the two)");
    }
    if (speed != nullptr) {
        def.velocity = GenerateDef::Velocity::Speed;
        def.speed = read_number(*speed, join(path, "speed"));
    } else {
        def.velocity = GenerateDef::Velocity::Temperature;
        def.temperature = read_number(*temperature, join(path, "temperature"));
    }
    if (const json* v = optional_key(item, "zero_momentum")) def.zero_momentum = read_bool(*v, join(path, "zero_momentum"));
    if (const json* v = optional_key(item, "seed")) def.seed = read_whole(*v, join(path, "seed"), 0x1p64);
    return def;
}

std::vector<BallId> add_generated(World& world, const json& list) {
    std::vector<BallId> ids;
    const json& items = read_list(list, "generate");
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string path = element("generate", i);
        const std::vector<BallDef> defs = generate_balls(world, read_generate(items[i], path), path);
        try {
            const std::vector<BallId> added = world.add_balls(defs);
            ids.insert(ids.end(), added.begin(), added.end());
        } catch (const InvalidArgument& error) {
            rethrow_under(error, path);
        }
    }
    return ids;
}

// `p` brought into the periodic box along the axes that wrap.
Vec3 wrapped(const WorldDef& def, Vec3 p) {
    if (!def.periodic) return p;
    const Box& box = *def.periodic;
    auto wrap = [](double x, double lo, double hi) {
        const double side = hi - lo;
        const double y = x - side * std::floor((x - lo) / side);
        return y < hi ? y : lo;  // rounding may land on hi
    };
    if (def.periodic_axes[0]) p.x = wrap(p.x, box.min.x, box.max.x);
    if (def.periodic_axes[1]) p.y = wrap(p.y, box.min.y, box.max.y);
    if (def.periodic_axes[2]) p.z = wrap(p.z, box.min.z, box.max.z);
    return p;
}

// Every static of `from` added to `to`, in order.
void copy_statics(const World& from, World& to) {
    for (std::uint32_t k = 0; k < from.plane_count(); ++k) to.add_plane(from.plane(k));
    for (std::uint32_t k = 0; k < from.cylinder_count(); ++k) to.add_cylinder(from.cylinder(k));
    for (std::uint32_t k = 0; k < from.capsule_count(); ++k) to.add_capsule(from.capsule(k));
    for (std::uint32_t k = 0; k < from.block_count(); ++k) to.add_block(from.block(k));
}

// The emitters of `list` (path "emitters"), checked: a ball the spout makes is tried on a world of
// the same settings, so a value add_ball() would refuse later is refused now, under its path;
// and every ball still to come must fit in the world's memory limit beside those it has.
std::vector<Emitter> read_emitter_list(const json& list, const World& world) {
    std::vector<Emitter> emitters;
    const json& items = read_list(list, "emitters");
    std::uint64_t owed = 0;
    // A ball from a spout's place must be one the world takes (finite, in range, in the periodic
    // box), clear of the statics: tried, at the corners and the centre of the spread, in a world
    // with the same settings and statics and no balls.
    WorldDef probe_def = world.def();
    probe_def.threads = 1;
    World probe(probe_def);
    if (!items.empty()) copy_statics(world, probe);
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string path = element("emitters", i);
        const json& item = items[i];
        expect_keys(item, path, {"position", "velocity", "spread", "radius", "mass", "count", "interval", "start",
                                 "seed", "emitted", "next"});
        Emitter e;
        e.position = vec3_at(item, path, "position");
        if (const json* v = optional_key(item, "velocity")) e.velocity = read_vec3(*v, join(path, "velocity"));
        if (const json* v = optional_key(item, "spread")) e.spread = read_vec3(*v, join(path, "spread"));
        e.radius = number_at(item, path, "radius");
        if (const json* v = optional_key(item, "mass")) e.mass = read_number(*v, join(path, "mass"));
        e.count = read_whole(required_key(item, path, "count"), join(path, "count"), 0x1p53);
        e.interval = number_at(item, path, "interval");
        e.next = world.time();
        if (const json* v = optional_key(item, "start")) {
            e.next = read_number(*v, join(path, "start"));
            if (e.next < world.time())
                fail(join(path, "start"), "must not be before the scene's time " + format("%.17g", world.time()) +
                                              ", got " + quote(*v));
        }
        if (const json* v = optional_key(item, "seed")) e.seed = read_whole(*v, join(path, "seed"), 0x1p64);
        if (const json* v = optional_key(item, "emitted")) e.emitted = read_whole(*v, join(path, "emitted"), 0x1p53);
        if (const json* v = optional_key(item, "next")) {
            if (optional_key(item, "start") != nullptr) fail(join(path, "next"), "give either \"start\" or \"next\", not both");
            e.next = read_number(*v, join(path, "next"));
            // Progress a run wrote: the next ball is due at or after the time it stopped (files of
            // earlier versions, which emitted at frame ends, up to a frame before: that ball comes
            // out at once). A spout that is empty keeps the time its next ball would have had.
            if (e.emitted < e.count &&
                e.next < world.time() - kFrame * (1 + 1e-6) - 8 * std::abs(world.time()) * 0x1p-52)
                fail(join(path, "next"), "must not be more than a frame (1/60) before the scene's time " +
                                             format("%.17g", world.time()) + ", got " + quote(*v));
        }
        for (const double half : {e.spread.x, e.spread.y, e.spread.z})
            if (!(std::isfinite(half) && half >= 0.0))
                fail(join(path, "spread"), "must be three finite numbers >= 0 (half-extents), got " + quote(item["spread"]));
        if (!(std::isfinite(e.interval) && e.interval > 0.0))
            fail(join(path, "interval"), "must be a finite time > 0, got " + quote(item["interval"]));
        if (e.emitted > e.count)
            fail(join(path, "emitted"), "must be at most \"count\" (" + std::to_string(e.count) + "), got " +
                                            std::to_string(e.emitted));
        // Each ball due later than the last: the interval must not vanish beside the times.
        const double last = e.next + e.interval * static_cast<double>(e.count - e.emitted);
        if (!std::isfinite(last))
            fail(join(path, "interval"), "times \"count\" puts the last ball beyond every finite time, got " +
                                             quote(item["interval"]));
        if (!(last + e.interval > last))
            fail(join(path, "interval"), "is too small for the times its balls are due at (up to " +
                                             format("%.17g", last) + "), got " + quote(item["interval"]));
        for (const Vec3 sign : {Vec3{0, 0, 0}, Vec3{-1, -1, -1}, Vec3{-1, -1, 1}, Vec3{-1, 1, -1}, Vec3{-1, 1, 1},
                                Vec3{1, -1, -1}, Vec3{1, -1, 1}, Vec3{1, 1, -1}, Vec3{1, 1, 1}}) {
            const Vec3 place =
                wrapped(world.def(), e.position + Vec3{sign.x * e.spread.x, sign.y * e.spread.y, sign.z * e.spread.z});
            try {
                probe.remove_ball(probe.add_ball({place, e.velocity, e.radius, e.mass}));
            } catch (const InvalidArgument& error) {
                rethrow_under(error, path);
            }
        }
        const std::uint64_t room = world.max_balls() - std::min(world.max_balls(), world.ball_count()) - owed;
        if (e.count - e.emitted > room)
            fail(join(path, "count"), "the emitters owe " + std::to_string(owed) + " + " +
                                          std::to_string(e.count - e.emitted) + " balls beside the " +
                                          std::to_string(world.ball_count()) + " the world has, more than the " +
                                          std::to_string(world.max_balls()) +
                                          " its memory limit allows (raise --memory-limit)");
        owed += e.count - e.emitted;
        emitters.push_back(e);
    }
    return emitters;
}

Scene build_scene(const json& root, const LoadOptions& options) {
    expect_keys(root, "",
                {"time", "gravity", "restitution", "rest_speed", "sleep_speed", "sleep_time", "sleep_events", "sleep_friction", "sleep_interval", "wake_lift",
                 "friction", "periodic", "box", "planes", "cylinders", "capsules", "blocks", "balls", "generate", "emitters"});
    Scene scene{make_world(root, options), {}};
    if (const json* v = optional_key(root, "box")) add_box(scene.world, *v);
    if (const json* v = optional_key(root, "planes")) add_planes(scene.world, *v);
    if (const json* v = optional_key(root, "cylinders")) add_cylinders(scene.world, *v);
    if (const json* v = optional_key(root, "capsules")) add_capsules(scene.world, *v);
    if (const json* v = optional_key(root, "blocks")) add_blocks(scene.world, *v);
    if (const json* v = optional_key(root, "balls")) scene.balls = add_explicit_balls(scene.world, *v);
    if (const json* v = optional_key(root, "generate")) {
        const std::vector<BallId> generated = add_generated(scene.world, *v);
        scene.balls.insert(scene.balls.end(), generated.begin(), generated.end());
    }
    if (const json* v = optional_key(root, "emitters")) scene.emitters = read_emitter_list(*v, scene.world);
    return scene;
}

// Uniform in [-1, 1) from (seed, ball, axis): SplitMix64 of their mix (Steele, Lea, Flood 2014).
double signed_unit(std::uint64_t seed, std::uint64_t ball, int d) {
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (3 * ball + static_cast<std::uint64_t>(d) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1p-52 - 1.0;
}

double ball_energy(Vec3 position, Vec3 velocity, double mass, Vec3 gravity) {
    return mass * (0.5 * dot(velocity, velocity) - dot(gravity, position));
}

// ---------------------------------------------------------------------------------------------
// Output helpers

using ordered = nlohmann::ordered_json;

ordered vec_json(Vec3 v) { return ordered::array({v.x, v.y, v.z}); }

ordered counters_json(std::span<const StaticCounters> counters) {
    ordered list = ordered::array();
    for (const StaticCounters& c : counters) list.push_back(ordered{{"hits", c.hits}, {"impulse", c.impulse}});
    return list;
}

std::string hex64(std::uint64_t value) {
    std::array<char, 24> text{};
    std::snprintf(text.data(), text.size(), "0x%016llx", static_cast<unsigned long long>(value));
    return text.data();
}

}  // namespace

// -------------------------------------------------------------------------------------------------

Scene load_scene_text(std::string_view text, const LoadOptions& options) {
    if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos)
        fail("", "byte " + std::to_string(nul) + " is a NUL character (a scene is JSON text)");
    return build_scene(parse_json(text), options);
}

Scene load_scene_file(const std::filesystem::path& path, const LoadOptions& options) {
    std::error_code status_error;
    const auto status = std::filesystem::status(path, status_error);
    if (status_error)
        throw InvalidArgument("", path.string() + ": cannot open scene file: " + status_error.message());
    if (status.type() != std::filesystem::file_type::regular)
        throw InvalidArgument("", path.string() + ": cannot open scene file: not a regular file" +
                                      (status.type() == std::filesystem::file_type::directory ? " (a directory)" : ""));
    std::ifstream file(path, std::ios::binary);
    if (!file) {
        const std::error_code error(errno, std::generic_category());
        throw InvalidArgument("", path.string() + ": cannot open scene file: " + error.message());
    }
    const std::uintmax_t size = std::filesystem::file_size(path, status_error);
    if (status_error)
        throw InvalidArgument("", path.string() + ": cannot read scene file: " + status_error.message());
    if (size > kMaxSceneBytes)
        throw InvalidArgument("", path.string() + ": scene file of " + std::to_string(size) + " bytes, larger than " +
                                      std::to_string(kMaxSceneBytes) + " bytes (the limit on scene files)");
    // One byte more than the file had: a file growing while it is read is caught, not followed.
    std::string text(static_cast<std::size_t>(size) + 1, '\0');
    file.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (file.bad()) throw InvalidArgument("", path.string() + ": cannot read scene file");
    text.resize(static_cast<std::size_t>(file.gcount()));
    if (text.size() > size) throw InvalidArgument("", path.string() + ": scene file changed while it was read");
    try {
        return load_scene_text(text, options);
    } catch (const InvalidArgument& error) {
        // "scene: line 3, ..." becomes "path: line 3, ...": the file is the scene.
        std::string message = error.what();
        if (error.field().empty() && message.starts_with("scene: ")) message.erase(0, 7);
        throw InvalidArgument(error.field(), path.string() + ": " + message);
    }
}

std::string_view default_scene_text() {
    // The lesson's room (five walls, open top) scaled to 80 units, its columns standing upright,
    // ten big balls thrown across it and a few hundred small ones, under Earth gravity.
    return R"({
  "gravity": [0, -9.81, 0],
  "restitution": 1.0,
  "planes": [
    {"point": [0, 0, 0], "normal": [0, 1, 0]},
    {"point": [-40, 0, 0], "normal": [1, 0, 0]},
    {"point": [40, 0, 0], "normal": [-1, 0, 0]},
    {"point": [0, 0, -40], "normal": [0, 0, 1]},
    {"point": [0, 0, 40], "normal": [0, 0, -1]}
  ],
  "cylinders": [
    {"point": [0, 0, 0], "axis": [0, 1, 0], "radius": 6},
    {"point": [24, 0, -20], "axis": [0, 1, 0], "radius": 4},
    {"point": [-24, 0, 18], "axis": [0, 1, 0], "radius": 4}
  ],
  "balls": [
    {"position": [-30, 20, -30], "velocity": [12, 0, 7], "radius": 2},
    {"position": [-15, 25, 30], "velocity": [-8, 5, -11], "radius": 2},
    {"position": [10, 30, -32], "velocity": [6, -3, 14], "radius": 2},
    {"position": [30, 22, 30], "velocity": [-13, 2, -5], "radius": 2},
    {"position": [-32, 35, 5], "velocity": [9, 0, 12], "radius": 2},
    {"position": [32, 40, -8], "velocity": [-10, 4, 9], "radius": 2},
    {"position": [5, 45, 25], "velocity": [14, -2, -6], "radius": 2},
    {"position": [-8, 28, -12], "velocity": [-7, 6, -13], "radius": 2},
    {"position": [18, 33, 8], "velocity": [11, -1, 10], "radius": 2},
    {"position": [-22, 42, -22], "velocity": [5, 3, 15], "radius": 2}
  ],
  "generate": [
    {"count": 300, "radius": 0.75, "mass": 0.05, "min": [-39, 1, -39], "max": [39, 40, 39],
     "speed": 8, "seed": 30}
  ]
})";
}

bool advance(World& world, double duration, const RunControl& control) {
    const std::uint64_t first = world.events_processed();
    const std::uint64_t step_budget = world.def().step_event_budget;
    // The run's budget lowers the world's step budget for a while, and its stop flag is the
    // world's interrupt flag; the world gets its own budget back, and no flag.
    struct Restore {
        World& world;
        std::uint64_t budget;
        ~Restore() {
            world.set_step_event_budget(budget);
            world.set_interrupt(nullptr);
        }
    } restore{world, step_budget};
    world.set_interrupt(control.stop);
    // Frame ends are the times n·kFrame, from the frame number, not from a running sum, so
    // rounding does not drift over many frames. A run that starts between two (a checkpoint
    // written when a signal or the event budget stopped a run, a scene's `time`) first finishes
    // its frame, and its end snaps to a frame end within a nanoframe: a run split anywhere then
    // ends its steps at the whole run's frame ends (a duration that ends between two adds one).
    const double start = world.time();
    double base = std::floor(start / kFrame);  // the frame end at or before the start
    if (base * kFrame > start) base -= 1.0;
    else if ((base + 1.0) * kFrame <= start) base += 1.0;
    double end = start + duration;
    if (const double last = std::round(end / kFrame); std::abs(last * kFrame - end) <= 1e-9 * kFrame && last * kFrame > start)
        end = last * kFrame;
    for (std::uint64_t frame = 1; world.time() < end; ++frame) {
        if (control.stop && control.stop->load(std::memory_order_relaxed)) return false;
        // The world's step budget, lowered to what is left of the run's: the step that spends the
        // last of it stops there.
        bool run_budget = false;
        if (control.event_budget != 0) {
            const std::uint64_t left = control.event_budget - (world.events_processed() - first);
            run_budget = step_budget == 0 || left < step_budget;
            world.set_step_event_budget(run_budget ? left : step_budget);
        }
        double target = (base + static_cast<double>(frame)) * kFrame;
        // A remainder below a nanoframe is rounding in duration / kFrame, not a real partial frame.
        if (target > end - 1e-9 * kFrame) target = end;
        try {
            if (control.step) control.step(world, target - world.time());
            else world.step(target - world.time());
            if (control.on_frame) control.on_frame(world);
        } catch (const StepInterrupted&) {
            return false;
        } catch (const BudgetExceeded&) {
            if (!run_budget) throw;
            std::ostringstream message;
            message << "--event-budget: " << control.event_budget << " events in the run, reached at time "
                    << world.time() << " (raise --event-budget)";
            throw BudgetExceeded(message.str());
        }
    }
    return true;
}

// A state that overflowed is an error, never a result.
void require_finite_state(const World& world) {
    const BallView balls = world.balls();
    for (std::size_t s = 0; s < balls.x.size(); ++s) {
        const Vec3 p{balls.x[s], balls.y[s], balls.z[s]}, v{balls.vx[s], balls.vy[s], balls.vz[s]};
        if (is_finite(p) && is_finite(v)) continue;
        std::ostringstream message;
        message << "the state is no longer finite at time " << world.time() << ": the ball with handle "
                << balls.id[s].value << " has position [" << p.x << ", " << p.y << ", " << p.z << "] and velocity ["
                << v.x << ", " << v.y << ", " << v.z << "] (the scene's magnitudes overflow double arithmetic)";
        throw std::runtime_error(message.str());
    }
}

namespace {

// Adds every ball the emitters owe by the world's time, each at its place in the spout's box
// with the spout's velocity; a spout whose place is taken waits, due again at `retry`.
void emit(Scene& scene, double retry) {
    World& world = scene.world;
    const double now = world.time();
    const Vec3 g = world.def().gravity;
    for (Emitter& e : scene.emitters) {
        while (e.emitted < e.count && e.next <= now) {
            const Vec3 from = e.position + Vec3{e.spread.x * signed_unit(e.seed, e.emitted, 0),
                                                e.spread.y * signed_unit(e.seed, e.emitted, 1),
                                                e.spread.z * signed_unit(e.seed, e.emitted, 2)};
            const Vec3 position = wrapped(world.def(), from);
            if (!world.is_free(position, e.radius)) {
                e.next = retry;  // it waits at the spout
                break;
            }
            // Room first: a ball in the world is in the list.
            if (scene.balls.size() == scene.balls.capacity()) scene.balls.reserve(2 * scene.balls.size() + 1);
            try {
                scene.balls.push_back(world.add_ball({position, e.velocity, e.radius, e.mass}));
            } catch (const InvalidArgument& error) {
                rethrow_under(error, element("emitters", static_cast<std::size_t>(&e - scene.emitters.data())));
            }
            scene.energy_emitted += ball_energy(position, e.velocity, e.mass, g);
            ++e.emitted;
            e.next += e.interval;
        }
    }
}

// When the next ball of any emitter is due after the world's time (+inf: none; a ball waiting
// at a taken spout is due again at the next step's start).
double next_due(const Scene& scene) {
    double next = std::numeric_limits<double>::infinity();
    for (const Emitter& e : scene.emitters)
        if (e.emitted < e.count && e.next > scene.world.time()) next = std::min(next, e.next);
    return next;
}

}  // namespace

StepResult step(Scene& scene, double dt) {
    World& world = scene.world;
    // Without emitters, or for a dt the world refuses (before any ball comes out): the plain step.
    if (scene.emitters.empty() || !(std::isfinite(dt) && world.time() + dt > world.time())) return world.step(dt);
    const double end = world.time() + dt;  // as World::step computes it
    emit(scene, end);  // the balls due now, and those waiting
    return world.step(dt, next_due(scene), [&scene, end](World&) {
        emit(scene, end);
        return next_due(scene);
    });
}

double total_energy(const Scene& scene) {
    const Vec3 g = scene.world.def().gravity;
    double energy = 0.0;
    for (const BallId id : scene.balls) {
        const BallState ball = scene.world.ball(id);
        energy += ball_energy(ball.position, ball.velocity, ball.mass, g);
    }
    return energy;
}

std::string settling_note(const World& world) {
    const WorldDef& def = world.def();
    const bool statics = world.plane_count() + world.capsule_count() + world.block_count() > 0;
    const Vec3 g = def.gravity;
    if (def.friction != 0.0 || !(def.restitution < 1.0) || !(def.sleep_speed > 0.0) || !statics ||
        g.x * g.x + g.y * g.y + g.z * g.z == 0.0)
        return {};
    const BallView balls = world.balls();
    const std::vector<std::uint8_t> asleep = world.sleeping_flags();
    const double slow2 = def.sleep_speed * def.sleep_speed;
    std::size_t slow = 0;
    for (std::size_t k = 0; k < balls.vx.size(); ++k)
        slow += !asleep[k] && balls.vx[k] * balls.vx[k] + balls.vy[k] * balls.vy[k] + balls.vz[k] * balls.vz[k] < slow2;
    const std::size_t sleeping = world.sleeping_count();
    if (slow <= sleeping || 10 * slow < balls.vx.size()) return {};
    return "note: most slow balls stay awake (" + std::to_string(slow) + " awake slower than sleep_speed, " +
           std::to_string(sleeping) + " asleep): without friction a pile keeps sliding and settles slowly; "
           "\"friction\": 0.5 settles it (docs/choosing-parameters.md)";
}

double RunStats::events_per_second() const {
    return wall_seconds > 0.0 ? static_cast<double>(run_collisions) / wall_seconds : 0.0;
}

double RunStats::relative_energy_drift() const {
    const double change = std::abs(energy_end - energy_start - energy_emitted);
    if (change == 0.0) return 0.0;
    return change / std::max(std::abs(energy_start), std::abs(energy_start + energy_emitted));
}

RunStats run_scene(Scene& scene, double duration, const RunControl& control, double equilibrate) {
    World& world = scene.world;
    RunStats stats;
    std::size_t emitted_before = scene.balls.size();
    double energy_emitted_before = scene.energy_emitted;
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t first = world.events_processed();
    // The collisions this run processes, for events_per_second(): the equilibration's are
    // counted before the reset clears them.
    std::uint64_t counted_from = world.event_counts().collisions(), equilibration_collisions = 0;
    // One phase of the run, on what is left of the run's event budget.
    auto phase = [&](double length) {
        RunControl left = control;
        if (control.event_budget != 0) {
            const std::uint64_t used = world.events_processed() - first;
            if (used >= control.event_budget)
                throw BudgetExceeded("--event-budget: " + std::to_string(control.event_budget) +
                                     " events spent on equilibration (raise --event-budget)");
            left.event_budget = control.event_budget - used;
        }
        auto inner = control.step;
        if (!inner && !scene.emitters.empty()) inner = [&scene](World&, double dt) { return step(scene, dt); };
        left.step = [&](World& w, double dt) {
            const StepResult result = inner ? inner(w, dt) : w.step(dt);
            stats.regions.count = result.regions;
            stats.regions.processed += result.events;
            stats.regions.events += result.in_regions;
            stats.regions.runs += result.region_runs;
            stats.regions.undone += result.undone;
            return result;
        };
        return advance(world, length, left);
    };
    try {
        bool finished = equilibrate > 0.0 ? phase(equilibrate) : true;
        if (equilibrate > 0.0 && finished) {
            equilibration_collisions = world.event_counts().collisions() - counted_from;
            counted_from = 0;
            world.reset_measurements();
        }
        stats.kinetic_energy_start = world.kinetic_energy();
        stats.momentum_start = world.momentum();
        stats.energy_start = total_energy(scene);
        emitted_before = scene.balls.size();
        energy_emitted_before = scene.energy_emitted;
        if (finished) finished = phase(duration);
        if (!finished) {
            stats.interrupted = true;
            stats.stop_reason = "signal";
        }
    } catch (const BudgetExceeded& error) {
        stats.interrupted = true;
        stats.stop_reason = error.what();
    } catch (const std::bad_alloc&) {  // the world stands at its last event, consistent
        stats.interrupted = true;
        stats.stop_reason = "out of memory";
    }
    require_finite_state(world);
    stats.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    stats.run_collisions = equilibration_collisions + (world.event_counts().collisions() - counted_from);
    stats.measured_from = world.measured_since();

    stats.balls = world.ball_count();
    stats.time = world.time();
    stats.events = world.event_counts();
    stats.planes.assign(world.plane_counters().begin(), world.plane_counters().end());
    stats.cylinders.assign(world.cylinder_counters().begin(), world.cylinder_counters().end());
    stats.capsules.assign(world.capsule_counters().begin(), world.capsule_counters().end());
    stats.blocks.assign(world.block_counters().begin(), world.block_counters().end());
    stats.kinetic_energy_end = world.kinetic_energy();
    stats.energy_end = total_energy(scene);
    stats.emitted = scene.balls.size() - emitted_before;
    stats.emitters = scene.emitters;
    stats.energy_emitted = scene.energy_emitted - energy_emitted_before;
    stats.momentum_end = world.momentum();
    stats.temperature = world.temperature();
    if (const double p = world.pressure(); !std::isnan(p)) stats.pressure = p;
    stats.max_overlap = world.max_overlap();
    stats.escaped = world.escaped_count();
    stats.sleeping = world.sleeping_count();
    stats.cell_width = world.cell_width();
    stats.threads = world.concurrency();
    stats.state_hash = world.state_hash();
    return stats;
}

namespace {
ordered emitter_progress(std::span<const Emitter> emitters) {
    ordered list = ordered::array();
    for (const Emitter& e : emitters) list.push_back(ordered{{"emitted", e.emitted}, {"left", e.count - e.emitted}, {"next", e.next}});
    return list;
}
}  // namespace

std::string stats_json(const RunStats& stats) {
    const ordered document = {
        {"balls", stats.balls},
        {"time", stats.time},
        {"measured_from", stats.measured_from},
        {"interrupted", stats.interrupted},
        {"stop_reason", stats.stop_reason},
        {"events",
         {{"ball_ball", stats.events.ball_ball},
          {"ball_plane", stats.events.ball_plane},
          {"ball_cylinder", stats.events.ball_cylinder},
          {"ball_capsule", stats.events.ball_capsule},
          {"ball_block", stats.events.ball_block},
          {"total", stats.events.collisions()}}},
        {"planes", counters_json(stats.planes)},
        {"cylinders", counters_json(stats.cylinders)},
        {"capsules", counters_json(stats.capsules)},
        {"blocks", counters_json(stats.blocks)},
        {"kinetic_energy", {{"start", stats.kinetic_energy_start}, {"end", stats.kinetic_energy_end}}},
        {"energy", {{"start", stats.energy_start}, {"end", stats.energy_end}, {"emitted", stats.energy_emitted}}},
        {"emitted", stats.emitted},
        {"emitters", emitter_progress(stats.emitters)},
        {"momentum", {{"start", vec_json(stats.momentum_start)}, {"end", vec_json(stats.momentum_end)}}},
        {"temperature", stats.temperature},
        {"pressure", stats.pressure ? ordered(*stats.pressure) : ordered(nullptr)},
        {"max_overlap", stats.max_overlap},
        {"escaped", stats.escaped},
        {"sleeping", stats.sleeping},
        {"cells", {{"width", stats.cell_width}, {"crossings", stats.events.cell_crossings}}},
        {"threads", stats.threads},
        {"regions",
         {{"count", stats.regions.count},
          {"events", stats.regions.events},
          {"share", stats.regions.share()},
          {"runs", stats.regions.runs},
          {"undone", stats.regions.undone}}},
        {"wall_seconds", stats.wall_seconds},
        {"events_per_second", stats.events_per_second()},
        {"state_hash", hex64(stats.state_hash)},
    };
    return document.dump(2) + "\n";
}

namespace {

ordered emitter_list(std::span<const Emitter> emitters) {
    ordered list = ordered::array();
    for (const Emitter& e : emitters)
        list.push_back(ordered{{"position", vec_json(e.position)}, {"velocity", vec_json(e.velocity)},
                               {"spread", vec_json(e.spread)}, {"radius", e.radius}, {"mass", e.mass},
                               {"count", e.count}, {"interval", e.interval}, {"seed", e.seed},
                               {"emitted", e.emitted}, {"next", e.next}});
    return list;
}

// The checksum of an emitter list and the world it belongs to: FNV-1a (64 bits) of the list's
// canonical text (keys sorted, as `json` dumps them: reading it back and dumping it again gives
// the same bytes) and the world's state hash.
std::string tail_checksum(const json& list, const std::string& world) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (const char c : list.dump() + world) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return hex64(hash);
}

}  // namespace

std::string emitters_json(const World& world, std::span<const Emitter> emitters) {
    const ordered list = emitter_list(emitters);
    const std::string state = hex64(world.state_hash());
    return ordered{{"emitters", list}, {"state_hash", state}, {"checksum", tail_checksum(json::parse(list.dump()), state)}}
               .dump() +
           "\n";
}

void read_emitters(Scene& scene, std::string_view text) {
    const json root = parse_json(text);
    expect_keys(root, "", {"emitters", "state_hash", "checksum"});
    const json& list = required_key(root, "", "emitters");
    const json& state = required_key(root, "", "state_hash");
    const json& checksum = required_key(root, "", "checksum");
    const std::string world = hex64(scene.world.state_hash());
    if (!state.is_string() || state.get<std::string>() != world)
        fail("state_hash", "is not the world's (" + world + "): the emitters belong to another world");
    const std::string expected = tail_checksum(list, world);
    if (!checksum.is_string() || checksum.get<std::string>() != expected)
        fail("checksum", "does not match the emitters (" + expected + "): the text is damaged");
    scene.emitters = read_emitter_list(list, scene.world);
}

std::string state_json(const World& world, std::span<const BallId> balls, std::span<const Emitter> emitters) {
    std::ostringstream out;
    write_state_json(out, world, balls, emitters);
    return std::move(out).str();
}

void write_state_json(std::ostream& out, const World& world, std::span<const BallId> balls, std::span<const Emitter> emitters) {
    const WorldDef& def = world.def();
    ordered document = {{"time", world.time()},
                        {"gravity", vec_json(def.gravity)},
                        {"restitution", def.restitution},
                        {"friction", def.friction},
                        {"rest_speed", def.rest_speed},
                        {"sleep_speed", def.sleep_speed},
                        {"sleep_time", def.sleep_time},
                        {"sleep_events", def.sleep_events},
                        {"sleep_friction", def.sleep_friction},
                        {"sleep_interval", def.sleep_interval},
                        {"wake_lift", def.wake_lift}};
    if (def.periodic) {
        document["periodic"] = {{"min", vec_json(def.periodic->min)}, {"max", vec_json(def.periodic->max)}};
        if (def.periodic_axes != std::array<bool, 3>{true, true, true})
            document["periodic"]["axes"] = {def.periodic_axes[0], def.periodic_axes[1], def.periodic_axes[2]};
    }
    ordered planes = ordered::array(), cylinders = ordered::array(), capsules = ordered::array(),
            blocks = ordered::array();
    for (std::uint32_t k = 0; k < world.plane_count(); ++k)
        planes.push_back({{"point", vec_json(world.plane(k).point)}, {"normal", vec_json(world.plane(k).normal)}});
    for (std::uint32_t k = 0; k < world.cylinder_count(); ++k) {
        const CylinderDef& c = world.cylinder(k);
        cylinders.push_back({{"point", vec_json(c.point)}, {"axis", vec_json(c.axis)}, {"radius", c.radius}});
    }
    for (std::uint32_t k = 0; k < world.capsule_count(); ++k) {
        const CapsuleDef& c = world.capsule(k);
        capsules.push_back({{"a", vec_json(c.a)}, {"b", vec_json(c.b)}, {"radius", c.radius}});
    }
    for (std::uint32_t k = 0; k < world.block_count(); ++k)
        blocks.push_back({{"min", vec_json(world.block(k).min)}, {"max", vec_json(world.block(k).max)}});
    document["planes"] = std::move(planes);
    document["cylinders"] = std::move(cylinders);
    if (!capsules.empty()) document["capsules"] = std::move(capsules);
    if (!blocks.empty()) document["blocks"] = std::move(blocks);
    // The balls, however many, are written one by one (the bytes of one document's dump()): the
    // text of millions never has to fit in memory at once.
    std::string head = document.dump();
    head.pop_back();  // its closing brace
    out << head << ",\"balls\":[";
    std::string chunk;
    for (std::size_t k = 0; k < balls.size(); ++k) {
        const BallState ball = world.ball(balls[k]);
        if (k > 0) chunk += ',';
        ordered item{{"position", vec_json(ball.position)}, {"velocity", vec_json(ball.velocity)},
                     {"radius", ball.radius}, {"mass", ball.mass}};
        if (ball.sleeping) item["sleeping"] = true;
        chunk += item.dump();
        if (chunk.size() >= (1u << 20)) {
            out << chunk;
            chunk.clear();
        }
    }
    out << chunk << ']';
    if (!emitters.empty()) out << ",\"emitters\":" << emitter_list(emitters).dump();
    out << "}\n";
}

std::string extxyz_frame(const World& world, std::span<const BallId> balls) {
    std::ostringstream out;
    write_extxyz_frame(out, world, balls);
    return std::move(out).str();
}

void write_extxyz_frame(std::ostream& out, const World& world, std::span<const BallId> balls) {
    // Shortest text that reads back as the same double; written in chunks of about a megabyte.
    std::string text;
    auto number = [&text](double v, char after) {
        std::array<char, 32> digits{};
        text.append(digits.data(), std::to_chars(digits.data(), digits.data() + digits.size(), v).ptr);
        text += after;
    };
    text += std::to_string(balls.size()) + "\n";
    if (const auto& box = world.def().periodic) {
        const Vec3 l = box->max - box->min;
        text += "Lattice=\"";
        for (const double v : {l.x, 0.0, 0.0, 0.0, l.y, 0.0, 0.0, 0.0}) number(v, ' ');
        number(l.z, '"');
        text += " Origin=\"";
        number(box->min.x, ' ');
        number(box->min.y, ' ');
        number(box->min.z, '"');
        const auto& wraps = world.def().periodic_axes;
        text += std::string(" pbc=\"") + (wraps[0] ? 'T' : 'F') + ' ' + (wraps[1] ? 'T' : 'F') + ' ' + (wraps[2] ? 'T' : 'F') + '"';
    } else {
        text += "pbc=\"F F F\"";
    }
    text += " Properties=species:S:1:pos:R:3:velo:R:3:radius:R:1 Time=";
    number(world.time(), '\n');
    for (const BallId id : balls) {
        const BallState b = world.ball(id);
        text += "X ";
        for (const double v : {b.position.x, b.position.y, b.position.z, b.velocity.x, b.velocity.y, b.velocity.z})
            number(v, ' ');
        number(b.radius, '\n');
        if (text.size() >= (1u << 20)) {
            out << text;
            text.clear();
        }
    }
    out << text;
}

std::string summary_text(const RunStats& stats) {
    std::ostringstream out;
    out << "balls             " << stats.balls << "\n"
        << "simulated time    " << format("%.6g", stats.time) << "\n"
        << "collisions        " << stats.events.collisions() << " (ball-ball " << stats.events.ball_ball
        << ", ball-plane " << stats.events.ball_plane << ", ball-cylinder " << stats.events.ball_cylinder
        << ", ball-capsule " << stats.events.ball_capsule << ", ball-block " << stats.events.ball_block << ")\n"
        << "events per second " << format("%.4g", stats.events_per_second()) << " (wall "
        << format("%.3g", stats.wall_seconds) << " s, " << stats.threads << " threads)\n"
        << "energy            start " << format("%.10g", stats.energy_start) << ", end "
        << format("%.10g", stats.energy_end)
        << (stats.emitted > 0 ? ", brought by " + std::to_string(stats.emitted) + " emitted balls " +
                                    format("%.10g", stats.energy_emitted)
                              : std::string())
        << ", relative drift "
        << format("%.3g", stats.relative_energy_drift()) << "\n"
        << "max overlap       " << format("%.3g", stats.max_overlap) << "\n"
        << "escaped           " << stats.escaped << "\n"
        << "sleeping          " << stats.sleeping << "\n"
        << "state hash        " << hex64(stats.state_hash) << "\n";
    return out.str();
}

}  // namespace ballistic::scene
