#!/usr/bin/perl
# wordfreq: the suite's perlbench input. perlbench runs SpamAssassin-style
# text processing and mail filtering in Perl; this script does the same kinds
# of work on a generated mailbox: regular-expression tokenising, hash tables
# of words and bigrams, string rewriting, sorting and sprintf formatting.
use strict;
use warnings;

my ($path, $rounds) = @ARGV;
open(my $fh, '<', $path) or die "wordfreq: cannot open $path: $!\n";
my @messages = split /\n\n/, do { local $/; <$fh> };
close $fh;

my (%words, %bigrams, %senders, @scores);
for my $round (1 .. $rounds) {
    for my $msg (@messages) {
        my ($header, $body) = split /\n/, $msg, 2;
        next unless defined $body;
        if ($header =~ /^From: (\w+)@(\w+)\.(\w+)/) {
            $senders{"$1\@$2"}++;
        }
        my $score = 0;
        my $prev = '';
        for my $w (map { lc } $body =~ /([A-Za-z]{2,})/g) {
            $words{$w}++;
            $bigrams{"$prev $w"}++ if $prev;
            $prev = $w;
            $score += length($w) % 3 == 0 ? 1 : 0;
        }
        (my $clean = $body) =~ s/\b(\w)(\w*)\b/\u$1$2/g;
        $score += ($clean =~ tr/A-Z//) % 7;
        push @scores, sprintf("%05d:%s", $score, substr($clean, 0, 12));
    }
}
my @top = (sort { $words{$b} <=> $words{$a} || $a cmp $b } keys %words)[0 .. 9];
my @pairs = (sort { $bigrams{$b} <=> $bigrams{$a} || $a cmp $b } keys %bigrams)[0 .. 4];
my @ranked = sort @scores;
printf "%d words, %d bigrams, %d senders; top %s; pair %s; first %s\n",
    scalar(keys %words), scalar(keys %bigrams), scalar(keys %senders), join(',', grep { defined } @top),
    $pairs[0] // '', $ranked[0] // '';
