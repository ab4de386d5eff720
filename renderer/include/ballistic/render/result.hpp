// Ballistic renderer — results of setup stages: a value, or an error that says which stage
// failed and why (in the spirit of vk-bootstrap's Result<T>).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace ballistic::render {

struct Error {
    std::string stage;    // what was being done, e.g. "create instance", "pick device"
    std::string reason;   // readable explanation, with every candidate's rejection where useful
    std::int32_t vk_result = 0;   // the VkResult when a Vulkan call failed, 0 otherwise

    std::string message() const { return stage + ": " + reason; }
};

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : state_(std::move(value)) {}
    Result(Error error) : state_(std::move(error)) {}

    bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(state_); }
    const T& value() const& { return std::get<0>(state_); }
    T&& value() && { return std::get<0>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }

    const Error& error() const { return std::get<1>(state_); }

private:
    std::variant<T, Error> state_;
};

// Result of a stage that produces nothing.
struct Done {};
using Status = Result<Done>;
inline Status ok() { return Done{}; }

}  // namespace ballistic::render
