// Phase 1's kernels on a GPU (label gpu; each test skips without a CUDA device).
#include <gtest/gtest.h>

#include <cmath>

#include "common/cuda/cuda_check.hpp"
#include "common/cuda/device_buffer.hpp"
#include "common/cuda/device_info.hpp"
#include "common/verify.hpp"
#include "phase1_cuda_baseline/cpu_gemm.hpp"
#include "phase1_cuda_baseline/elementwise.cuh"
#include "phase1_cuda_baseline/gemm.cuh"
#include "phase1_cuda_baseline/trainer.hpp"

namespace {

class Phase1Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ob::probe_cuda().devices == 0) GTEST_SKIP() << "no CUDA device";
    CUBLAS_CHECK(cublasCreate(&cublas_));
  }
  void TearDown() override {
    if (cublas_) cublasDestroy(cublas_);
  }
  cublasHandle_t cublas_ = nullptr;
};

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = ob::exact_pattern(seed, i, 1000) / 997.0f;
  return v;
}

}  // namespace

TEST_F(Phase1Gpu, EveryKernelMatchesTheReferenceAtOddSizes) {
  const phase1::GemmShape shapes[] = {{1000, 257, 300}, {1, 1, 1}, {33, 17, 65}, {129, 130, 17}, {7, 300, 1}};
  std::uint64_t seed = 11;
  for (auto base : shapes) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        phase1::GemmShape s = base;
        s.trans_a = ta;
        s.trans_b = tb;
        const auto a = random_values(static_cast<std::size_t>(s.m) * s.k, ++seed);  // fresh data every case
        const auto b = random_values(static_cast<std::size_t>(s.k) * s.n, ++seed);
        ob::DeviceBuffer<float> da(a.size()), db(b.size()), dc(static_cast<std::size_t>(s.m) * s.n);
        da.upload(a);
        db.upload(b);
        std::vector<int> rows(s.m);
        for (int i = 0; i < s.m; ++i) rows[i] = i;
        const auto ref = phase1::reference_gemm_rows({s.m, s.n, s.k, ta, tb}, a.data(), b.data(), rows);
        for (auto kernel : {phase1::GemmKernel::kNaive, phase1::GemmKernel::kTiled, phase1::GemmKernel::kCublas}) {
          phase1::fill(dc.get(), NAN, dc.size(), nullptr);  // poisoned: an unwritten element fails
          phase1::gemm(kernel, cublas_, false, s, da.get(), db.get(), dc.get(), nullptr);
          CUDA_CHECK(cudaDeviceSynchronize());
          const auto c = dc.download();
          const auto check = ob::compare_relative(c.data(), ref.data(), ref.size());
          EXPECT_TRUE(check.passes(1e-5)) << phase1::gemm_kernel_name(kernel) << " " << s.m << "x" << s.n << "x" << s.k
                                          << " ta=" << ta << " tb=" << tb << ": " << check.describe(1e-5);
        }
      }
    }
  }
}

TEST_F(Phase1Gpu, Tf32StaysWithinItsTolerance) {
  const phase1::GemmShape s{256, 192, 512};
  const auto a = random_values(256 * 512, 3), b = random_values(512 * 192, 4);
  ob::DeviceBuffer<float> da(a.size()), db(b.size()), dc(256 * 192);
  da.upload(a);
  db.upload(b);
  phase1::gemm(phase1::GemmKernel::kCublas, cublas_, true, s, da.get(), db.get(), dc.get(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int> rows(256);
  for (int i = 0; i < 256; ++i) rows[i] = i;
  const auto ref = phase1::reference_gemm_rows({256, 192, 512}, a.data(), b.data(), rows);
  const auto c = dc.download();
  const auto check = ob::compare_relative(c.data(), ref.data(), ref.size());
  EXPECT_TRUE(check.passes(1e-2)) << check.describe(1e-2);
  EXPECT_GT(check.rel_error, 0.0);  // TF32 really rounds
}

TEST_F(Phase1Gpu, SgdStepAndLossGradientAreExact) {
  // Values chosen so every operation is exact in fp32.
  const std::vector<float> w = {1.0f, -2.0f, 0.5f, 4.0f}, dw = {0.5f, 0.25f, -1.0f, 2.0f};
  ob::DeviceBuffer<float> dw_dev(4), w_dev(4);
  w_dev.upload(w);
  dw_dev.upload(dw);
  phase1::sgd_update(w_dev.get(), dw_dev.get(), 0.5f, 4, nullptr);
  EXPECT_EQ(w_dev.download(), (std::vector<float>{0.75f, -2.125f, 1.0f, 3.0f}));

  const std::vector<float> y = {1, 2, 3, 4}, t = {0, 2, 5, 4};
  ob::DeviceBuffer<float> y_dev(4), t_dev(4), dy_dev(4);
  ob::DeviceBuffer<double> loss(1);
  y_dev.upload(y);
  t_dev.upload(t);
  CUDA_CHECK(cudaMemset(loss.get(), 0, sizeof(double)));
  phase1::mse_loss_grad(y_dev.get(), t_dev.get(), dy_dev.get(), loss.get(), 4, nullptr);
  EXPECT_EQ(dy_dev.download(), (std::vector<float>{0.5f, 0.0f, -1.0f, 0.0f}));  // 2 (y - t) / 4
  EXPECT_EQ(loss.download()[0], 5.0);  // 1 + 0 + 4 + 0
}

TEST_F(Phase1Gpu, LossFallsAHundredfoldIn200StepsWithEveryKernel) {
  phase1::Config config;
  config.batch = 256;
  config.in = 64;
  config.out = 32;
  config.lr = 20.0f;
  config.common.iters = 200;
  config.common.warmup = 0;
  config.common.check = true;
  phase1::Trainer trainer(config);
  for (auto kernel : {phase1::GemmKernel::kNaive, phase1::GemmKernel::kTiled, phase1::GemmKernel::kCublas}) {
    const auto result = trainer.run(kernel);
    ASSERT_EQ(result.loss.size(), 200u);
    EXPECT_GT(result.loss.front(), 0.0);
    EXPECT_GE(result.loss.front() / result.loss.back(), 100.0) << phase1::gemm_kernel_name(kernel);
    EXPECT_TRUE(result.forward_check.passes(1e-5)) << result.forward_check.describe(1e-5);
    EXPECT_TRUE(result.backward_check.passes(1e-5)) << result.backward_check.describe(1e-5);
    EXPECT_EQ(result.events.size(), 200u * 4);
    for (const auto& ms : result.kernel_ms) {
      ASSERT_EQ(ms.size(), 200u);
      EXPECT_GT(ms.front(), 0.0);
    }
  }
}

TEST_F(Phase1Gpu, CheckerCatchesAWrongKernelResult) {
  const std::vector<double> ref = {1, 2, 3};
  const std::vector<float> wrong = {1, 2, 3.01f};
  EXPECT_FALSE(ob::compare_relative(wrong.data(), ref.data(), 3).passes(1e-5));
}
