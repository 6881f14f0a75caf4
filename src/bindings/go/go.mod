module kcache.io/kcache

go 1.19
