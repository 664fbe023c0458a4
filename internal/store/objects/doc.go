// Package objects owns object_ledger, the object ledger of the
// object-storage source: for each object of a bucket a source reads, the
// ETag, version id and size its document was recorded from, and the last
// run whose listing named it.
//
// The ledger is what makes a run incremental and its deletes certain. A
// row is written (Record) in the transaction that records the object's
// document, so a run killed mid-listing or mid-fetch leaves the rows of
// what it recorded and nothing else: the next run fetches only the rest.
// A listing touches the rows of the objects it names (Touch); after a
// complete listing the rows it did not touch are objects gone from the
// bucket, and once their documents are deleted their rows are forgotten
// (ForgetUnseen). Every write to object_ledger lives here.
package objects
