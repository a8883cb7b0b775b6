# Sourced: source_stamp prints a hash of the C++, CUDA and CMake sources that the engine's binaries are built
# from (core, gpu, bench, packbuilder, app, tests; every CMakeLists.txt), the same here and in the GPU
# machine's copy of the working tree (which carries no .git of this commit), so tests/gpu/prebuild_for_device.sh
# can stamp what it built and tests/gpu/pass_build_and_test.sh can tell whether those binaries are this tree's.
source_stamp() {
  find CMakeLists.txt core gpu bench packbuilder app tests -type f \
    \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.in' \
    -o -name 'CMakeLists.txt' -o -name '*.cmake' \) -print0 2> /dev/null |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}
