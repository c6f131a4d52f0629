// The version, from package.json: CMakeLists.txt and scripts/build-wasm.sh pass it as XATTN_VERSION, so
// the npm package, the C++ library and the wasm module can only ever report the same one.
#include "xattn/xattn.hpp"

#ifndef XATTN_VERSION
#error "XATTN_VERSION must be defined by the build (it is read from package.json)"
#endif

namespace xattn {

const char* version() { return XATTN_VERSION; }

}  // namespace xattn
