// SPDX-License-Identifier: GPL-2.0-or-later
//
// File: common/expected.hpp
//
// `Expected<T, E>`: the value of an operation that can fail in an expected
// way (a broken script, a bad return value, a corrupt record).  Expected
// failures are values in this project; exceptions are for bugs only and never
// cross the C ABI, a Lua C function or an Asio handler.
//
//   Expected<int> parse(std::string_view s);
//   auto r = parse("12");
//   if (!r) log(r.error().message);
//   else use(*r);
//
// `Error` is the default error: one human-readable message that already names
// what an operator needs (file, hook, JobId, path, value).  C++20 has no
// std::expected; this is the small subset the project uses.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace switchlua {

/// An expected failure: a complete, operator-readable message.
struct Error {
  std::string message;
};

/// Wraps an error value so `Expected<T, E>` can be built from it.
template <typename E> struct Unexpected {
  E error;
};

/// Builds an `Unexpected<Error>` from a message.
inline Unexpected<Error> fail(std::string message) {
  return {Error{std::move(message)}};
}

/// Either a T or an E.  Accessing the wrong alternative is a bug (asserts).
template <typename T, typename E = Error> class [[nodiscard]] Expected {
public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  template <typename U>
  Expected(Unexpected<U> e) : v_(std::in_place_index<1>, E(std::move(e.error))) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T &operator*() { return value(); }
  const T &operator*() const { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &value() {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T &value() const {
    assert(has_value());
    return std::get<0>(v_);
  }
  E &error() {
    assert(!has_value());
    return std::get<1>(v_);
  }
  const E &error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }

private:
  std::variant<T, E> v_;
};

/// `Expected<void>`: success or an error.
template <typename E> class [[nodiscard]] Expected<void, E> {
public:
  Expected() = default;
  template <typename U> Expected(Unexpected<U> e) : e_(E(std::move(e.error))), ok_(false) {}
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const E &error() const {
    assert(!ok_);
    return e_;
  }

private:
  E e_{};
  bool ok_ = true;
};

} // namespace switchlua
