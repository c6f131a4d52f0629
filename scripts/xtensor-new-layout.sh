#!/usr/bin/env bash
# scripts/xtensor-new-layout.sh OUT: Debian's xtensor headers (0.24) rearranged into the include layout of xtensor
# 0.26 and later, for scripts/test-consumer.sh (no package of a newer xtensor exists here to test against):
#   OUT/include/xtensor/<folder>/<name>.hpp  each of Debian's headers at its 0.26 path, its own includes rewritten
#                                            to those paths; nothing at an old path such as xtensor/xarray.hpp
#   OUT/lib/cmake/xtensor/                   a package config whose target xtensor offers OUT/include and requires
#                                            C++20, as xtensor 0.27's does, beside Debian's version file
#   OUT/sysroot/usr/include/                 the system headers without xtensor/: compiled with
#                                            -isysroot OUT/sysroot, the old paths cannot be reached at all
set -euo pipefail
out=${1:?usage: scripts/xtensor-new-layout.sh OUT}
system=/usr/include
debian_config=$(dirname "$(find /usr/lib /usr/share -path '*/cmake/xtensor/xtensorConfigVersion.cmake' -print -quit)")

# Where xtensor 0.26 keeps each header that 0.24 has at the top of xtensor/.
layout='
chunk:      xchunked_array xchunked_assign xchunked_view
containers: xadapt xarray xbuffer_adaptor xcontainer xfixed xscalar xstorage xtensor
core:       xaccessible xassign xeval xexpression xexpression_traits xfunction xiterable xiterator xlayout xmath
            xmultiindex_iterator xnoalias xoperation xsemantic xshape xstrides xtensor_config xtensor_forward
            xvectorize
generators: xbuilder xgenerator xrandom
io:         xcsv xinfo xio xjson xmime xnpy
misc:       xcomplex xexpression_holder xhistogram xmanipulation xpad xset_operation xsort
optional:   xoptional xoptional_assembly xoptional_assembly_base xoptional_assembly_storage
reducers:   xaccumulator xblockwise_reducer xblockwise_reducer_functors xnorm xreducer
utils:      xexception xtensor_simd xutils
views:      xaxis_iterator xaxis_slice_iterator xbroadcast xdynamic_view xfunctor_view xindex_view xmasked_view
            xoffset_view xrepeat xslice xstrided_view xstrided_view_base xview xview_utils
'
declare -A folder_of
folder=
for word in $layout; do
  case $word in
    *:) folder=${word%:} ;;
    *) folder_of[$word]=$folder ;;
  esac
done

rm -rf "$out"
mkdir -p "$out/include/xtensor" "$out/lib/cmake/xtensor" "$out/sysroot/usr/include"

# One sed program for every header: "xarray.hpp" (0.24's own includes, relative to xtensor/) and
# <xtensor/xarray.hpp> become <xtensor/containers/xarray.hpp>.
rewrite=()
for name in "${!folder_of[@]}"; do
  rewrite+=(-e "s|^\([[:space:]]*#[[:space:]]*include[[:space:]]*\)[\"<]\(xtensor/\)\?$name\.hpp[\">]|\1<xtensor/${folder_of[$name]}/$name.hpp>|")
done
for header in "$system"/xtensor/*.hpp; do
  name=$(basename "$header" .hpp)
  if [ -z "${folder_of[$name]:-}" ]; then
    echo "xtensor-new-layout: no 0.26 folder known for xtensor/$name.hpp" >&2
    exit 1
  fi
  mkdir -p "$out/include/xtensor/${folder_of[$name]}"
  sed "${rewrite[@]}" "$header" > "$out/include/xtensor/${folder_of[$name]}/$name.hpp"
done
# Every include of an xtensor header now names a 0.26 path.
if grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*("x[a-z_]*\.hpp"|[<"]xtensor/x[a-z_]*\.hpp)' "$out/include" >&2; then
  echo "xtensor-new-layout: the includes above still name 0.24 paths" >&2
  exit 1
fi

cat > "$out/lib/cmake/xtensor/xtensorConfig.cmake" <<'EOF'
# Debian's xtensor headers in the 0.26+ include layout (scripts/xtensor-new-layout.sh). Its xtl is the system's.
if(NOT TARGET xtensor)
  get_filename_component(_xtensor_include "${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
  add_library(xtensor INTERFACE IMPORTED)
  set_target_properties(xtensor PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_xtensor_include}"
    INTERFACE_COMPILE_FEATURES cxx_std_20)
endif()
EOF
cp "$debian_config/xtensorConfigVersion.cmake" "$out/lib/cmake/xtensor/"

for entry in "$system"/*; do
  [ "$(basename "$entry")" = xtensor ] || ln -s "$entry" "$out/sysroot/usr/include/"
done
