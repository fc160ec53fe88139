#include <gtest/gtest.h>

#include "common/console_table.hpp"

TEST(ConsoleTable, TwoHeaderRowsAlignedRight) {
  ob::ConsoleTable table({{"mode", ""}, {"time", "ms"}});
  table.add_row({"seq", "150.2"});
  table.add_row({"overlap", "9.5"});
  EXPECT_EQ(table.render(),
            "#     mode   time\n"
            "#            (ms)\n"
            "       seq  150.2\n"
            "   overlap    9.5\n");
}

TEST(ConsoleTable, RejectsWrongCellCount) {
  ob::ConsoleTable table({{"a", ""}, {"b", ""}});
  EXPECT_THROW(table.add_row({"1"}), std::invalid_argument);
}
