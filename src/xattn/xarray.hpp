// xt::xarray, the array type of xattn's API, from whichever include layout the xtensor in use has: 0.26 moved its
// headers into folders (<xtensor/containers/xarray.hpp>), 0.24 and 0.25 keep them at the top (<xtensor/xarray.hpp>).
// The one place in the library that names an xtensor header.
#pragma once

#if __has_include(<xtensor/containers/xarray.hpp>)
#include <xtensor/containers/xarray.hpp>
#elif __has_include(<xtensor/xarray.hpp>)
#include <xtensor/xarray.hpp>
#else
#error "xattn needs xtensor 0.24 or later on the include path: found neither <xtensor/containers/xarray.hpp> nor <xtensor/xarray.hpp>"
#endif
