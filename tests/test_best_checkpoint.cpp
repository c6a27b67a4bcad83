// tests/test_best_checkpoint.cpp — the best epoch of a run and early stopping (examples/best_checkpoint.h):
// which epoch is the best, when a run stops, and the state's round trip through checkpoint metadata.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "examples/best_checkpoint.h"

using examples::BestTracker;

TEST_CASE("best checkpoint: higher accuracy wins, the loss breaks ties, early stop counts epochs", "[best]") {
  BestTracker best;
  CHECK(best.best_epoch() == 0);
  CHECK(!best.should_stop(0, 2));
  CHECK(best.metadata().empty());
  // epoch: accuracy, loss
  CHECK(best.update(1, 0.0, 2.5));    // the first epoch is always the best so far
  CHECK(best.update(2, 0.0, 2.0));    // same accuracy, lower loss
  CHECK(!best.update(3, 0.0, 2.0));   // a tie at both: the earlier model stays
  CHECK(best.update(4, 0.5, 3.0));    // higher accuracy, whatever the loss
  CHECK(!best.update(5, 0.4, 0.1));   // lower accuracy, whatever the loss
  CHECK(best.best_epoch() == 4);
  CHECK(best.best_accuracy() == 0.5);
  CHECK(best.epochs_without_improvement(5) == 1);
  CHECK(!best.should_stop(5, 2));
  CHECK(!best.update(6, 0.5, 3.0));
  CHECK(best.should_stop(6, 2));      // epochs 5 and 6 without a new best
  CHECK(!best.should_stop(6, 3));
  CHECK(!best.should_stop(6, 0));     // no --early-stop: never

  BestTracker resumed;
  resumed.restore(best.metadata());
  CHECK(resumed.best_epoch() == 4);
  CHECK(resumed.best_accuracy() == best.best_accuracy());
  CHECK(resumed.best_loss() == best.best_loss());
  CHECK(resumed.should_stop(6, 2));

  BestTracker older;  // a file without the keys: the best starts afresh
  older.restore({{"epoch", "3"}});
  CHECK(older.best_epoch() == 0);
  CHECK_THROWS_WITH(older.restore({{"best_epoch", "3"}}), Catch::Contains("best_val_accuracy"));
}
