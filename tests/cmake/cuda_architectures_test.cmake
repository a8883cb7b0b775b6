# cmake -P tests/cmake/cuda_architectures_test.cmake: moepack_choose_cuda_architectures and
# moepack_parse_compute_caps (cmake/MoepackCudaArchitectures.cmake) against hand-worked cases. Reports every
# mismatch, then exits non-zero if there was one.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/MoepackCudaArchitectures.cmake)

# expect(CAPS NVCC_ARCHS WANT_ARCHS WANT_NOTE_COUNT [NOTE_SUBSTRING])
function(expect caps nvcc want notes_want)
  moepack_choose_cuda_architectures(archs notes "${caps}" "${nvcc}")
  list(LENGTH notes n)
  set(ok TRUE)
  if(NOT "${archs}" STREQUAL "${want}" OR NOT n EQUAL notes_want)
    set(ok FALSE)
  endif()
  if(ARGC GREATER 4 AND NOT notes MATCHES "${ARGV4}")
    set(ok FALSE)
  endif()
  if(NOT ok)
    message(SEND_ERROR "caps '${caps}', nvcc '${nvcc}': got '${archs}' with ${n} notes (${notes}); "
                       "want '${want}' with ${notes_want}")
  endif()
endfunction()

set(cuda13 compute_75 compute_80 compute_86 compute_89 compute_90 compute_100 compute_103 compute_110 compute_120
    compute_121)
set(cuda124 compute_50 compute_60 compute_70 compute_75 compute_80 compute_86 compute_89 compute_90)
# No GPU seen (CI): the default, sm_90.
expect("" "${cuda13}" "90" 0)
# H100 / H200.
expect("9.0" "${cuda13}" "90" 0)
# RTX 5090 with CUDA 13: real sm_120 code.
expect("12.0" "${cuda13}" "120" 0)
# DGX Spark (12.1): sm_120's real code runs on 12.1 (same major, higher minor).
expect("12.1" "${cuda13}" "120" 0)
# RTX 5090 with CUDA 12.4 (no compute_120): sm_90's PTX, compiled by the driver, with a note.
expect("12.0" "${cuda124}" "90" 1 "does not build sm_120")
# B200 (10.0): no tested sm_10x, so sm_90 with its PTX, noted.
expect("10.0" "${cuda13}" "90" 1 "not built for sm_10x")
# RTX 4090 (8.9): below 9.0, noted, nothing built for it: the default.
expect("8.9" "${cuda13}" "90" 1 "needs 9.0")
# Two cards, listed twice and unsorted: each once, sorted numerically.
expect("12.0;9.0;12.0" "${cuda13}" "90;120" 0)
# A line that is not a compute capability.
expect("N/A;12.0" "${cuda13}" "120" 1 "not a compute capability")
# An nvcc that builds none of the tested architectures.
expect("9.0" "compute_75;compute_80" "90" 1 "builds none")
# nvcc could not be asked: the tested architecture of the card's major version, noted.
expect("12.0" "" "120" 1 "nvcc's architectures unknown")
expect("8.9" "" "90" 1 "needs 9.0")

# nvidia-smi's output as it comes: CR LF line ends, blanks, an unavailable value, an error line.
function(expect_caps text want)
  moepack_parse_compute_caps(caps "${text}")
  if(NOT "${caps}" STREQUAL "${want}")
    message(SEND_ERROR "nvidia-smi output '${text}': got '${caps}', want '${want}'")
  endif()
endfunction()
expect_caps("12.0\r\n 9.0 \r\n" "12.0;9.0")
expect_caps("[N/A]\n12.0\n\n" "12.0")
expect_caps("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n" "")
expect_caps("" "")
