"""Mining: pair calls with results, judge outcomes, find recoveries, classify, select."""
