#include <gtest/gtest.h>
#include "core/quants.h"
TEST(Quants, Placeholder) { EXPECT_TRUE(moepack::quant_supported(moepack::GgmlType::Q4_K)); }
