# The CUDA architectures MoePack's CUDA backend is built for when CMAKE_CUDA_ARCHITECTURES is not given:
# the GPUs of the building machine (nvidia-smi's compute capabilities), so a user's build holds real code for
# the card it will run on (an RTX 50xx: sm_120) instead of PTX the driver compiles at first use.
#
# MOEPACK_CUDA_TESTED_ARCHITECTURES: the architectures this code is compiled and run for (sm_90: H100 / H200;
# sm_120: RTX 50xx, compiled with every release build). The backend needs compute capability 9.0 or later
# (gpu/cuda_arch.h kMinComputeCapability).
set(MOEPACK_CUDA_TESTED_ARCHITECTURES 90 120)
set(MOEPACK_CUDA_DEFAULT_ARCHITECTURE 90)

# moepack_choose_cuda_architectures(OUT_ARCHS OUT_NOTES CAPS NVCC_ARCHS)
#   CAPS: the GPUs' compute capabilities as nvidia-smi prints them ("12.0;9.0"; empty: no GPU seen);
#   NVCC_ARCHS: what `nvcc --list-gpu-arch` prints ("compute_90;compute_120").
# For each GPU of compute capability cc >= 9.0: the highest tested architecture t <= cc whose major version is
# cc's (its real code runs there: sm_120 on 12.0 and 12.1) if nvcc builds it, else the highest tested t <= cc
# nvcc builds, whose PTX the driver compiles for the card at first use (noted). GPUs below 9.0 are noted and
# skipped. No architecture left: MOEPACK_CUDA_DEFAULT_ARCHITECTURE (90; a machine without a GPU, as CI).
# OUT_ARCHS: a sorted list for CMAKE_CUDA_ARCHITECTURES (each entry real code plus its PTX); OUT_NOTES: one
# line per note.
function(moepack_choose_cuda_architectures out_archs out_notes caps nvcc_archs)
  set(archs "")
  set(notes "")
  foreach(cap IN LISTS caps)
    string(STRIP "${cap}" cap)
    if(cap STREQUAL "")
      continue()
    endif()
    if(NOT cap MATCHES "^([0-9]+)\\.([0-9])$")
      list(APPEND notes "nvidia-smi printed '${cap}', not a compute capability: ignored")
      continue()
    endif()
    set(major ${CMAKE_MATCH_1})
    math(EXPR cc "${CMAKE_MATCH_1} * 10 + ${CMAKE_MATCH_2}")
    if(cc LESS 90)
      list(APPEND notes "a GPU of compute capability ${cap}: the CUDA backend needs 9.0 or later (not built for it)")
      continue()
    endif()
    set(native "")
    set(ptx "")
    set(tested_major "")  # a tested architecture of cc's major version at or below cc, built or not
    foreach(t IN LISTS MOEPACK_CUDA_TESTED_ARCHITECTURES)
      if(t GREATER cc)
        continue()
      endif()
      math(EXPR t_major "${t} / 10")
      if(t_major EQUAL major)
        set(tested_major ${t})
      endif()
      if(NOT "compute_${t}" IN_LIST nvcc_archs)
        continue()
      endif()
      set(ptx ${t})
      if(t_major EQUAL major)
        set(native ${t})
      endif()
    endforeach()
    if(NOT native STREQUAL "")
      list(APPEND archs ${native})
    elseif(NOT ptx STREQUAL "")
      list(APPEND archs ${ptx})
      if(tested_major STREQUAL "")
        set(why "MoePack's kernels are not built for sm_${major}x")
      else()
        set(why "this nvcc does not build sm_${tested_major} (a newer CUDA toolkit gives real code)")
      endif()
      string(CONCAT note "a GPU of compute capability ${cap}: ${why}, so it runs sm_${ptx}'s PTX, which the driver "
                         "compiles for the card at its first use (minutes, then cached)")
      list(APPEND notes "${note}")
    elseif(nvcc_archs STREQUAL "")
      # (nvcc could not be asked: the tested architecture of cc's major version, else the default)
      if(NOT tested_major STREQUAL "")
        list(APPEND archs ${tested_major})
      endif()
      list(APPEND notes "a GPU of compute capability ${cap}: nvcc's architectures unknown (nvcc --list-gpu-arch failed)")
    else()
      string(REPLACE ";" ", " tested "${MOEPACK_CUDA_TESTED_ARCHITECTURES}")
      list(APPEND notes "a GPU of compute capability ${cap}: this nvcc builds none of sm ${tested}")
    endif()
  endforeach()
  if(archs STREQUAL "")
    set(archs ${MOEPACK_CUDA_DEFAULT_ARCHITECTURE})
  endif()
  list(REMOVE_DUPLICATES archs)
  list(SORT archs COMPARE NATURAL)
  set(${out_archs} "${archs}" PARENT_SCOPE)
  set(${out_notes} "${notes}" PARENT_SCOPE)
endfunction()

# moepack_parse_compute_caps(OUT TEXT): the compute capabilities in nvidia-smi's
# `--query-gpu=compute_cap --format=csv,noheader` output TEXT, one a line ("12.0", CR and blanks around it
# dropped); lines that are not one ("[N/A]", an error) are left out.
function(moepack_parse_compute_caps out text)
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(caps "")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line MATCHES "^[0-9]+\\.[0-9]$")
      list(APPEND caps "${line}")
    endif()
  endforeach()
  set(${out} "${caps}" PARENT_SCOPE)
endfunction()

# Sets CMAKE_CUDA_ARCHITECTURES, as a normal variable of the caller's scope, from this machine's GPUs and NVCC's
# architectures where it was not given, printing what it chose and why. Call before enable_language(CUDA).
#   - Given (-DCMAKE_CUDA_ARCHITECTURES=..., or CMake's own cache entry from CUDAARCHS at the build directory's
#     first configure, unless moepack_cuda_architectures_after_enable drops it): kept. To hand the choice
#     back: `cmake -U CMAKE_CUDA_ARCHITECTURES`, an empty `-DCMAKE_CUDA_ARCHITECTURES=`, or a new build
#     directory. Also kept: a normal variable set before the call (a toolchain file, a parent project).
#   - CUDAARCHS set (and nothing cached): taken, at every configure it is set (call
#     moepack_cuda_architectures_after_enable after enable_language(CUDA): CMake's compiler detection caches
#     CUDAARCHS at a build directory's first configure, which would then count as given).
#   - Otherwise chosen again at every configure (a build directory follows a change of GPU), never written to
#     the cache, so a value in the cache is always one given by hand. Where nvidia-smi is found but fails or
#     times out (a driver updated without a reboot: exit 18), the last choice made from GPUs it saw
#     (MOEPACK_CUDA_ARCHITECTURES_CHOSEN) is kept, with a warning, instead of falling back to sm_90; where it
#     says there is no GPU ("No devices were found", exit 6), none is seen.
# NVIDIA_SMI (optional second argument): the program to ask, for tests; default: nvidia-smi on PATH.
function(moepack_detect_cuda_architectures nvcc)
  # A build directory configured before this rule (fifty-eighth session) cached its own choice; drop it.
  if(DEFINED CACHE{MOEPACK_CUDA_ARCHITECTURES_DETECTED})
    if("$CACHE{CMAKE_CUDA_ARCHITECTURES}" STREQUAL "$CACHE{MOEPACK_CUDA_ARCHITECTURES_DETECTED}")
      unset(CMAKE_CUDA_ARCHITECTURES CACHE)
    endif()
    unset(MOEPACK_CUDA_ARCHITECTURES_DETECTED CACHE)
  endif()
  if(DEFINED CACHE{CMAKE_CUDA_ARCHITECTURES} AND "$CACHE{CMAKE_CUDA_ARCHITECTURES}" STREQUAL "")
    unset(CMAKE_CUDA_ARCHITECTURES CACHE)  # (an empty -DCMAKE_CUDA_ARCHITECTURES=: the choice handed back)
  endif()
  if(DEFINED CACHE{CMAKE_CUDA_ARCHITECTURES})
    message(STATUS "MoePack CUDA: built for CMAKE_CUDA_ARCHITECTURES=$CACHE{CMAKE_CUDA_ARCHITECTURES} as given "
                   "(cmake -U CMAKE_CUDA_ARCHITECTURES to choose from this machine's GPUs)")
    return()
  endif()
  if(DEFINED CMAKE_CUDA_ARCHITECTURES)
    message(STATUS "MoePack CUDA: built for CMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES} as set "
                   "(a toolchain file or a parent project)")
    return()
  endif()
  if(NOT "$ENV{CUDAARCHS}" STREQUAL "")
    message(STATUS "MoePack CUDA: built for CUDAARCHS=$ENV{CUDAARCHS}")
    set(CMAKE_CUDA_ARCHITECTURES "$ENV{CUDAARCHS}" PARENT_SCOPE)
    set(MOEPACK_CUDA_ARCHITECTURES_FROM_ENV "$ENV{CUDAARCHS}" PARENT_SCOPE)
    return()
  endif()
  set(caps "")
  set(smi_failed "")
  if(ARGC GREATER 1)
    set(smi "${ARGV1}")
  else()
    find_program(MOEPACK_NVIDIA_SMI nvidia-smi)
    set(smi "${MOEPACK_NVIDIA_SMI}")
  endif()
  if(smi)
    execute_process(COMMAND "${smi}" --query-gpu=compute_cap --format=csv,noheader OUTPUT_VARIABLE out
                    ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 20)
    if(rc EQUAL 0)
      moepack_parse_compute_caps(caps "${out}")
    elseif(rc EQUAL 6 OR "${out}${err}" MATCHES "No devices were found|No supported GPUs")
      # (no GPU: caps stays empty)
    else()
      # rc: the exit status, or a message ("Process terminated due to timeout").
      string(REGEX REPLACE "[\r\n].*" "" said "${err}${out}")
      string(STRIP "${said}" said)
      set(smi_failed "${smi} failed (${rc}")
      if(NOT said STREQUAL "")
        string(APPEND smi_failed ": ${said}")
      endif()
      string(APPEND smi_failed ")")
    endif()
  endif()
  if(NOT smi_failed STREQUAL "" AND DEFINED CACHE{MOEPACK_CUDA_ARCHITECTURES_CHOSEN})
    set(archs "$CACHE{MOEPACK_CUDA_ARCHITECTURES_CHOSEN}")
    string(REPLACE ";" ", " built "${archs}")
    message(WARNING "MoePack CUDA: ${smi_failed}; built for sm ${built} as at the last configure that saw "
                    "this machine's GPUs")
    set(CMAKE_CUDA_ARCHITECTURES "${archs}" PARENT_SCOPE)
    return()
  endif()
  set(nvcc_archs "")
  if(NOT nvcc STREQUAL "")
    execute_process(COMMAND "${nvcc}" --list-gpu-arch OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 20)
    if(rc EQUAL 0)
      string(REGEX REPLACE "[ \t\r\n]+" ";" nvcc_archs "${out}")
    endif()
  endif()
  moepack_choose_cuda_architectures(archs notes "${caps}" "${nvcc_archs}")
  foreach(note IN LISTS notes)
    message(STATUS "MoePack CUDA: ${note}")
  endforeach()
  string(REPLACE ";" ", " built "${archs}")
  if(NOT smi_failed STREQUAL "")
    message(WARNING "MoePack CUDA: ${smi_failed}; built for sm ${built} (-DCMAKE_CUDA_ARCHITECTURES=... to choose)")
  elseif(caps STREQUAL "")
    message(STATUS "MoePack CUDA: no GPU seen (nvidia-smi); built for sm ${built}")
  else()
    string(REPLACE ";" ", " seen "${caps}")
    message(STATUS "MoePack CUDA: this machine's GPUs (compute capability ${seen}): built for sm ${built}")
    set(MOEPACK_CUDA_ARCHITECTURES_CHOSEN "${archs}" CACHE INTERNAL "CUDA architectures MoePack last chose from GPUs it saw")
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${archs}" PARENT_SCOPE)
endfunction()

# Call right after enable_language(CUDA). Where moepack_detect_cuda_architectures took CUDAARCHS, CMake's
# compiler detection (at a build directory's first configure) has also cached it; dropped again, so that a
# later configure without CUDAARCHS chooses from this machine's GPUs instead of keeping it as given.
function(moepack_cuda_architectures_after_enable)
  if(DEFINED MOEPACK_CUDA_ARCHITECTURES_FROM_ENV AND DEFINED CACHE{CMAKE_CUDA_ARCHITECTURES} AND
     "$CACHE{CMAKE_CUDA_ARCHITECTURES}" STREQUAL "${MOEPACK_CUDA_ARCHITECTURES_FROM_ENV}")
    unset(CMAKE_CUDA_ARCHITECTURES CACHE)
  endif()
endfunction()
