# Third-party packages every build needs (OverlapPackages.cmake), and GoogleTest for the tests.
include(${CMAKE_CURRENT_LIST_DIR}/OverlapPackages.cmake)

if(OVERLAP_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()

# overlap_gtest(TARGET PROPERTIES...): the suite's tests, listed when ctest runs (PRE_TEST). Listing loads the binary
# and its libraries (CUDA, cuBLAS, NCCL: hundreds of MB); CMake's 5 s default ran out on a loaded 2-core CI machine
# (round 6, common_cuda_tests), so the listing gets the time a test gets.
function(overlap_gtest target)
  gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 300 ${ARGN})
endfunction()
