# Sourced by the build scripts: sets LAUNCHER to the CMake arguments that compile through ccache when it
# is installed (scripts/setup.sh installs it), so a machine that has built kiln before reuses its objects.
# The sloppiness lets ccache cache objects built with the precompiled MLIR header (cmake/KilnPch.cmake):
# without it ccache refuses them (the PCH's timestamps and defines) and every object is a miss.
LAUNCHER=""
if command -v ccache >/dev/null 2>&1; then
  l="env;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;ccache"
  LAUNCHER="-DCMAKE_C_COMPILER_LAUNCHER=$l -DCMAKE_CXX_COMPILER_LAUNCHER=$l"
fi
