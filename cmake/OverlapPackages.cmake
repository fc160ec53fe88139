# The packages overlap_common's users link (OpenMP, MPI, threads, CLI11, nlohmann-json): found the same way when
# building the suite and when a project uses the installed package (overlap_benchConfig.cmake). CLI11 and
# nlohmann-json are header-only: where a distribution ships the headers without a CMake package, fall back to the
# headers alone.
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)

# A header-only package's target: its CMake package where one is installed, else an imported target of its headers.
function(overlap_header_only_package package target header)
  find_package(${package} CONFIG QUIET)
  if(NOT TARGET ${target})
    find_path(${package}_INCLUDE_DIR ${header} REQUIRED)
    add_library(${target} INTERFACE IMPORTED)
    target_include_directories(${target} INTERFACE ${${package}_INCLUDE_DIR})
  endif()
endfunction()

overlap_header_only_package(CLI11 CLI11::CLI11 CLI/CLI.hpp)
overlap_header_only_package(nlohmann_json nlohmann_json::nlohmann_json nlohmann/json.hpp)
