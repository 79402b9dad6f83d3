// How many fields an aggregate has, counted at compile time: the most initialisers `T{...}`
// takes. The state hash (model/hash.cc) and the snapshot codec (log/codec_snapshot.cc) state
// the count of each type they walk, so a field added to the model fails the build there until
// it is hashed and encoded, instead of being lost silently from replay and recovery.
#pragma once

#include <cstddef>
#include <utility>

namespace tenon {
namespace fields {

// Stands for any one field's initialiser. By lvalue or rvalue reference, so that a field whose
// type could also be built from it in some other way (an optional, a variant) is not ambiguous.
struct AnyField {
  template <class T>
  operator T&() const noexcept;
  template <class T>
  operator T&&() const noexcept;
};

template <class T, std::size_t... I>
constexpr bool TakesInitialisers(std::index_sequence<I...>) {
  return requires {
    T{(static_cast<void>(I), AnyField{})...};
  };
}

// Past any aggregate of the model: a type that takes this many is not one to count.
inline constexpr std::size_t kFieldsMax = 96;

}  // namespace fields

template <class T, std::size_t N = 0>
constexpr std::size_t FieldCount() {
  static_assert(N <= fields::kFieldsMax, "FieldCount: not an aggregate of the model");
  if constexpr (fields::TakesInitialisers<T>(std::make_index_sequence<N + 1>{})) {
    return FieldCount<T, N + 1>();
  } else {
    return N;
  }
}

}  // namespace tenon
