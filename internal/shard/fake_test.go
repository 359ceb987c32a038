package shard_test

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func fakeHub() client.Client { return fake.NewClientBuilder().Build() }
