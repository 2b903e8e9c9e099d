module github.com/idembench/idembench

go 1.26
