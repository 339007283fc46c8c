module github.com/redisync/redisync

go 1.26.0

require github.com/stretchr/testify v1.12.1

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/redis/rueidis v1.0.79 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
