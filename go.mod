module github.com/backoffgo/backoff

go 1.25
