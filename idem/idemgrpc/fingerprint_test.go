package idemgrpc_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idembench/idembench/idem/idemgrpc"
)

func TestFingerprintPolicy(t *testing.T) {
	field := func(name, json string, deprecated, lazy *bool) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), JsonName: proto.String(json)}
		if deprecated != nil || lazy != nil {
			f.Options = &descriptorpb.FieldOptions{Deprecated: deprecated, Lazy: lazy}
		}
		return f
	}
	yes, no := proto.Bool(true), proto.Bool(false)
	incl := idemgrpc.FingerprintPolicy{Policy: "f/v1", Include: []string{"name", "options.deprecated"}}
	excl := idemgrpc.FingerprintPolicy{Policy: "f/v1", Exclude: []string{"json_name", "options.lazy"}}
	tests := []struct {
		name string
		p    idemgrpc.FingerprintPolicy
		a, b *descriptorpb.FieldDescriptorProto
		same bool
	}{
		{"include: other fields ignored", incl, field("amount", "a", yes, yes), field("amount", "b", yes, no), true},
		{"include: an included field differs", incl, field("amount", "a", yes, nil), field("amount", "a", no, nil), false},
		{"include: an empty parent equals an absent one", incl, field("amount", "a", nil, yes), field("amount", "b", nil, nil), true},
		{"include: top-level field differs", incl, field("amount", "a", nil, nil), field("total", "a", nil, nil), false},
		{"exclude: excluded fields ignored", excl, field("amount", "a", yes, yes), field("amount", "b", yes, no), true},
		{"exclude: the rest counts", excl, field("amount", "a", yes, nil), field("amount", "a", no, nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.p.Func()
			fa, err := f(context.Background(), "/pay.Svc/Charge", tt.a)
			if err != nil {
				t.Fatal(err)
			}
			fb, err := f(context.Background(), "/pay.Svc/Charge", tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if (fa == fb) != tt.same {
				t.Fatalf("same fingerprint = %v, want %v", fa == fb, tt.same)
			}
			if tt.a.GetJsonName() == "" {
				t.Fatal("the policy changed the caller's message")
			}
		})
	}
	v2 := incl
	v2.Policy = "f/v2"
	a, _ := incl.Func()(context.Background(), "/m", field("x", "", nil, nil))
	b, _ := v2.Func()(context.Background(), "/m", field("x", "", nil, nil))
	if a == b {
		t.Error("two policy versions give the same fingerprint")
	}
	bad := idemgrpc.FingerprintPolicy{Include: []string{"name.x"}}
	if _, err := bad.Func()(context.Background(), "/m", field("x", "", nil, nil)); err == nil {
		t.Error("a path through a scalar field was accepted")
	}
	if _, err := (idemgrpc.FingerprintPolicy{Exclude: []string{"nope"}}).Func()(context.Background(), "/m", wrapperspb.String("x")); err == nil {
		t.Error("an unknown field was accepted")
	}
}
