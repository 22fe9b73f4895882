package otel_test

import "time"

func tp2time(i int) time.Time { return time.Unix(int64(1000+i), 0) }
