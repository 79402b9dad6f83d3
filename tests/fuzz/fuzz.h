// What the fuzz targets share: reading the input, telling a parser's documented error from any
// other exception, and checking that a value survives the log codec.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>
#include <utility>

namespace tenon::fuzz {

inline std::string Text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Stops the run: libFuzzer keeps the input as a crash.
[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz: %s\n", what.c_str());
  std::abort();
}

// For ReturnsOrThrows on a function that promises not to throw at all.
struct NothingDocumented {};

// Runs `parse`: true if it returned, false if it threw `Documented` (the error its header
// promises for bad input). Any other exception is a bug of the parser, reported with its type:
// callers up the stack only catch the documented one.
template <class Documented, class Parse>
bool ReturnsOrThrows(Parse&& parse) {
  try {
    std::forward<Parse>(parse)();
    return true;
  } catch (const Documented&) {
    return false;
  } catch (const std::exception& e) {
    Fail(std::string("threw ") + typeid(e).name() + " instead of " + typeid(Documented).name() +
         ": " + e.what());
  } catch (...) {
    Fail(std::string("threw something other than ") + typeid(Documented).name());
  }
}

}  // namespace tenon::fuzz
