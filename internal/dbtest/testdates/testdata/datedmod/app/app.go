// Package app holds a command table.
package app

import "example.com/datedmod/seed"

// Command is one command.
type Command struct {
	Name   string
	Action func() int
}

func fill() int { return seed.Mode("seed") }

// Commands is the table.
func Commands() []Command { return []Command{{Name: "fill", Action: fill}} }
