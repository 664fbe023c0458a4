// Package sources owns the sources table: the sources an operator
// declared (sluice sources add), the settings each kind's reader needs,
// and what the producer records of each sync (its time, its lag, its
// error) and a follower of its wake-ups. Every statement on sources,
// reads included, lives here.
package sources
