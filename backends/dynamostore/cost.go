package dynamostore

import (
	"encoding/json"
	"fmt"
	"io"
)

// Prices is an on-demand price table: dollars per million request units,
// with where and when the figures were read, so a report can say which
// prices it used. Users with other prices (another region, a discount, a
// later change) load their own with LoadPrices.
type Prices struct {
	// Region the prices are for.
	Region string `json:"region"`
	// Date the figures were read or took effect (YYYY-MM-DD).
	Date string `json:"date"`
	// Source is where they were read.
	Source string `json:"source"`
	// WritePerMillion and ReadPerMillion are dollars per million write and
	// read request units (on-demand).
	WritePerMillion float64 `json:"write_per_million"`
	ReadPerMillion  float64 `json:"read_per_million"`
}

// DefaultPrices is DynamoDB on-demand in us-east-1 (Standard table class)
// as published after AWS's price reduction of 1 November 2024: $0.625 per
// million write request units, $0.125 per million read request units.
var DefaultPrices = Prices{
	Region:          "us-east-1",
	Date:            "2024-11-01",
	Source:          "https://aws.amazon.com/dynamodb/pricing/on-demand/",
	WritePerMillion: 0.625,
	ReadPerMillion:  0.125,
}

// LoadPrices reads a Prices table as JSON (the field names of Prices'
// json tags). Unknown fields, a negative price or a missing date or source
// are errors: a cost figure must say where its prices come from.
func LoadPrices(r io.Reader) (Prices, error) {
	var p Prices
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Prices{}, fmt.Errorf("dynamostore: price table: %w", err)
	}
	switch {
	case p.WritePerMillion < 0 || p.ReadPerMillion < 0:
		return Prices{}, fmt.Errorf("dynamostore: price table: negative price (write %v, read %v)", p.WritePerMillion, p.ReadPerMillion)
	case p.Date == "" || p.Source == "":
		return Prices{}, fmt.Errorf("dynamostore: price table: date and source are required")
	}
	return p, nil
}

// Cost is the on-demand bill of u at prices p, in dollars.
func (u Usage) Cost(p Prices) float64 {
	return (u.WriteUnits*p.WritePerMillion + u.ReadUnits*p.ReadPerMillion) / 1e6
}

// PerMillion is the bill of a million calls that each used what calls
// calls used together in u, in dollars: the figure to compare across
// backends and designs. Zero calls give zero.
func (u Usage) PerMillion(calls int64, p Prices) float64 {
	if calls <= 0 {
		return 0
	}
	return u.Cost(p) / float64(calls) * 1e6
}
